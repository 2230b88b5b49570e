import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Caller } from '../server/auth.ts';

/**
 * Identity verification (docs/api.md#keys-and-projects): true when the call needs no check (REST key, or the
 * project has it off) or when `hash` is lowercase hex HMAC-SHA256(identity secret, external_id).
 */
export function identityOk(caller: Caller, externalId: string, hash: string | undefined): boolean {
  if (caller.type === 'rest' || !caller.verifyIdentity) return true;
  if (hash === undefined || hash.length !== 64) return false;
  const expected = createHmac('sha256', caller.identitySecret).update(externalId).digest();
  const given = Buffer.from(hash, 'hex');
  // A non-hex or uppercase hash decodes short or differs from its lowercase form: refuse it.
  if (given.length !== expected.length || given.toString('hex') !== hash) return false;
  return timingSafeEqual(given, expected);
}
