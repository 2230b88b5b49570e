import { CallerError } from '../../schemas/errors.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { Caller } from '../server/auth.ts';
import type { GatewayDeps } from '../server/deps.ts';
import type { Exchange } from '../server/exchange.ts';
import { identityOk } from './identity.ts';

/**
 * Accepted writes (docs/api.md#buffered-writes-what-a-202-promises): each body becomes ingest
 * entries, answered 202 once they are durable.
 */

export const ACCEPTED = '{"accepted":true}';
/** Body limit of an SDK write (docs/api.md#limits). */
export const SDK_LIMIT = 64 * 1024;

/** Appends `entries` and answers 202 with `answer`; a failed append rejects, to be answered by its kind. */
export async function accept(deps: GatewayDeps, ex: Exchange, entries: IngestEntry[], answer: string): Promise<void> {
  await deps.ingest.write(entries);
  deps.metrics.acceptedWrites.inc(entries.length);
  ex.send(202, answer);
}

/** A write of one user: identity (401), then one entry appended. */
export function acceptOne(deps: GatewayDeps, ex: Exchange, caller: Caller, externalId: string, hash: string | undefined, entry: (at: number) => IngestEntry): Promise<void> {
  if (!identityOk(caller, externalId, hash)) throw new CallerError('identity_verification_failed');
  return accept(deps, ex, [entry(Date.now())], ACCEPTED);
}
