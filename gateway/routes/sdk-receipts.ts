import { Accepted, ReceiptBody } from '../../schemas/sdk.ts';
import { acceptOne, SDK_LIMIT } from '../ingest/accept.ts';
import { receiptEntry } from '../ingest/entries.ts';
import { httpRoute } from '../server/route.ts';

export const sdkReceipts = httpRoute({
  method: 'post',
  path: '/api/sdk/receipts',
  auth: 'sdk',
  summary: 'Report a delivery receipt (buffered)',
  identityHeader: true,
  body: { schema: ReceiptBody, limit: SDK_LIMIT },
  answers: { 202: Accepted },
  errors: ['identity_verification_failed', 'overloaded'],
  handler:
    ({ deps }) =>
    ({ ex, caller, body, identityHash }) =>
      acceptOne(deps, ex, caller, body.external_id, identityHash, (at) => receiptEntry(caller.project, body, at)),
});
