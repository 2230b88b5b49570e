import { Accepted, IdentifyBody } from '../../schemas/sdk.ts';
import { acceptOne, SDK_LIMIT } from '../ingest/accept.ts';
import { identifyEntry } from '../ingest/entries.ts';
import { httpRoute } from '../server/route.ts';

export const sdkUsers = httpRoute({
  method: 'post',
  path: '/api/sdk/users',
  auth: 'sdk',
  summary: 'Create or identify a user, merge tags (buffered)',
  body: { schema: IdentifyBody, limit: SDK_LIMIT },
  answers: { 202: Accepted },
  errors: ['identity_verification_failed', 'overloaded'],
  handler:
    ({ deps }) =>
    ({ ex, caller, body }) =>
      acceptOne(deps, ex, caller, body.external_id, body.identity_hash, (at) => identifyEntry(caller.project, body, at)),
});
