import { Accepted, EventBody } from '../../schemas/sdk.ts';
import { acceptOne, SDK_LIMIT } from '../ingest/accept.ts';
import { eventEntry } from '../ingest/entries.ts';
import { httpRoute } from '../server/route.ts';

export const sdkEvents = httpRoute({
  method: 'post',
  path: '/api/sdk/events',
  auth: 'sdk',
  summary: 'Track an event (buffered)',
  identityHeader: true,
  body: { schema: EventBody, limit: SDK_LIMIT },
  answers: { 202: Accepted },
  errors: ['identity_verification_failed', 'overloaded'],
  handler:
    ({ deps }) =>
    ({ ex, caller, body, identityHash }) =>
      acceptOne(deps, ex, caller, body.external_id, identityHash, (at) => eventEntry(caller.project, body, at)),
});
