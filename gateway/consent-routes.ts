import type { TemplatedApp } from 'uWebSockets.js';
import { writeConsent } from '../engine/state/consent.ts';
import { CallerError } from '../schemas/errors.ts';
import { identityOk } from './auth.ts';
import type { GatewayDeps } from './context.ts';
import { bodyRoute, RouteMetric } from './http.ts';
import { valid } from './validation.ts';

export const consentRoutes = {
  optOut: { path: '/api/sdk/opt-out', allow: 'POST' },
  optIn: { path: '/api/sdk/opt-in', allow: 'POST' },
} as const;

/**
 * Opt-out and opt-in (API.md section 3.1): never buffered. The consent hash is written directly and
 * the 200 goes out only after Redis acknowledged it; an unconfirmed write claims nothing (503 when
 * Redis cannot be reached or answer in time). No user record is needed, so consent for users not yet known is kept.
 */
export function registerConsentRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  for (const [route, optedOut] of [
    [consentRoutes.optOut, true],
    [consentRoutes.optIn, false],
  ] as const) {
    app.post(
      route.path,
      bodyRoute(deps, {
        metric: new RouteMetric(deps.metrics.requests, route.path),
        restOnly: false,
        hasParam: false,
        limit: 64 * 1024,
        handle: async (ex, caller, body, info) => {
          const { external_id, subscription_type } = valid(deps.validators.consent(body));
          if (!identityOk(caller, external_id, info.identityHash || undefined)) throw new CallerError('identity_verification_failed');
          const stored = await writeConsent(deps.redis, deps.topology, caller.project, external_id, subscription_type, optedOut, Date.now());
          ex.send(200, JSON.stringify({ external_id, subscription_type, opted_out: stored.opted_out, at: new Date(stored.at).toISOString() }));
        },
      }),
    );
  }
}
