import { writeConsent } from '../../engine/state/users/consent.ts';
import { CallerError } from '../../schemas/errors.ts';
import type { ConsentBody } from '../../schemas/sdk.ts';
import type { Handle, Setup } from '../server/route.ts';
import { identityOk } from './identity.ts';

/**
 * Opt-out and opt-in (docs/api.md#opt-out-and-opt-in): never buffered. The consent hash is
 * written directly and the 200 goes out only after Redis acknowledged it (503 when it cannot be
 * confirmed). No user record is needed, so consent for users not yet known is kept.
 */
export function consentHandler(optedOut: boolean): (setup: Setup) => Handle<'sdk', unknown, unknown, ConsentBody> {
  return ({ deps }) =>
    async ({ ex, caller, body: { external_id, subscription_type }, identityHash }) => {
      if (!identityOk(caller, external_id, identityHash)) throw new CallerError('identity_verification_failed');
      const stored = await writeConsent(deps.redis, deps.topology, caller.project, external_id, subscription_type, optedOut, Date.now());
      ex.send(200, JSON.stringify({ external_id, subscription_type, opted_out: stored.opted_out, at: new Date(stored.at).toISOString() }));
    };
}
