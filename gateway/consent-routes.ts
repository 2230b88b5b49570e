import type { TemplatedApp } from 'uWebSockets.js';
import { writeConsent } from '../engine/state/consent.ts';
import { identityOk } from './auth.ts';
import type { GatewayDeps } from './context.ts';
import { bodyRoute, RouteMetric } from './http.ts';

export const consentRoutes = {
  optOut: { path: '/api/sdk/opt-out', allow: 'POST' },
  optIn: { path: '/api/sdk/opt-in', allow: 'POST' },
} as const;

/**
 * Opt-out and opt-in (API.md section 3.1): never buffered. The consent hash is written directly and
 * the 200 goes out only after Redis acknowledged it; an unconfirmed write is a 503 that claims
 * nothing. No user record is needed, so consent for users not yet known is kept.
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
        handle: (ex, caller, body, info) => {
          const checked = deps.validators.consent(body);
          if (!checked.ok) return ex.fail('validation_failed', checked.errors);
          const { external_id, subscription_type } = checked.value;
          if (!identityOk(caller, external_id, info.identityHash || undefined)) return ex.fail('identity_verification_failed');
          writeConsent(deps.redis, deps.topology, caller.project, external_id, subscription_type, optedOut, Date.now()).then(
            (stored) =>
              ex.send(
                200,
                JSON.stringify({ external_id, subscription_type, opted_out: stored.opted_out, at: new Date(stored.at).toISOString() }),
              ),
            (err: unknown) => {
              deps.tracker.redisFailed('consent write', err);
              ex.unavailable();
            },
          );
        },
      }),
    );
  }
}
