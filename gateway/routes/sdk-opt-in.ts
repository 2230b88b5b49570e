import { ConsentAnswer, ConsentBody } from '../../schemas/sdk.ts';
import { SDK_LIMIT } from '../ingest/accept.ts';
import { consentHandler } from '../ingest/consent.ts';
import { httpRoute } from '../server/route.ts';

export const sdkOptIn = httpRoute({
  method: 'post',
  path: '/api/sdk/opt-in',
  auth: 'sdk',
  summary: 'Lift an opt-out (synchronous)',
  identityHeader: true,
  body: { schema: ConsentBody, limit: SDK_LIMIT },
  answers: { 200: ConsentAnswer },
  errors: ['identity_verification_failed'],
  handler: consentHandler(false),
});
