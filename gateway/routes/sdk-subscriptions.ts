import { CallerError } from '../../schemas/errors.ts';
import { Accepted, SubscriptionBody } from '../../schemas/sdk.ts';
import { acceptOne, SDK_LIMIT } from '../ingest/accept.ts';
import { refusedEndpoint } from '../ingest/endpoints.ts';
import { subscribeEntry } from '../ingest/entries.ts';
import { checkSubscription } from '../ingest/sdk-checks.ts';
import { httpRoute } from '../server/route.ts';
import { UserParams } from './params.ts';

export const sdkSubscriptions = httpRoute({
  method: 'post',
  path: '/api/sdk/users/{external_id}/subscriptions',
  auth: 'sdk',
  summary: 'Register a subscription (buffered)',
  params: UserParams,
  identityHeader: true,
  body: { schema: SubscriptionBody, limit: SDK_LIMIT, check: checkSubscription },
  answers: { 202: Accepted },
  errors: ['identity_verification_failed', 'overloaded'],
  handler:
    ({ deps }) =>
    ({ ex, caller, params, body, identityHash }) => {
      const refused = refusedEndpoint(deps.config, body, '/token');
      if (refused) throw new CallerError('validation_failed', [refused]);
      return acceptOne(deps, ex, caller, params.external_id, identityHash, (at) => subscribeEntry(caller.project, params.external_id, body, at));
    },
});
