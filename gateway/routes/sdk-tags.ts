import { Accepted, TagsBody } from '../../schemas/sdk.ts';
import { acceptOne, SDK_LIMIT } from '../ingest/accept.ts';
import { tagsEntry } from '../ingest/entries.ts';
import { httpRoute } from '../server/route.ts';
import { UserParams } from './params.ts';

export const sdkTags = httpRoute({
  method: 'put',
  path: '/api/sdk/users/{external_id}/tags',
  auth: 'sdk',
  summary: 'Merge tags; "" or null deletes (buffered)',
  params: UserParams,
  identityHeader: true,
  body: { schema: TagsBody, limit: SDK_LIMIT },
  answers: { 202: Accepted },
  errors: ['identity_verification_failed', 'overloaded'],
  handler:
    ({ deps }) =>
    ({ ex, caller, params, body, identityHash }) =>
      acceptOne(deps, ex, caller, params.external_id, identityHash, (at) => tagsEntry(caller.project, params.external_id, body, at)),
});
