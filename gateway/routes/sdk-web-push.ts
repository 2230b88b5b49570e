import { ProviderStore } from '../../engine/state/keys/provider-store.ts';
import { CallerError } from '../../schemas/errors.ts';
import { WebPushSettings } from '../../schemas/sdk.ts';
import { httpRoute } from '../server/route.ts';

/**
 * What a page needs to subscribe a browser to Web Push: the project's VAPID public key (never the
 * private one) and whether its worker sends `delivered` receipts (docs/api.md#web-push-for-the-web-sdk).
 */
export const sdkWebPush = httpRoute({
  method: 'get',
  path: '/api/sdk/web-push',
  auth: 'sdk',
  summary: "The project's VAPID public key and receipt settings, for the web SDK",
  answers: { 200: WebPushSettings },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const providers = new ProviderStore(deps.redis, deps.topology);
    return async ({ ex, caller }) => {
      const creds = await providers.get(caller.project, 'webpush');
      if (creds === null || !('vapid_public_key' in creds)) {
        throw new CallerError('not_found', [{ code: 'not_found', message: 'This project has no Web Push credentials: set them with `engine providers set <project> webpush`.' }]);
      }
      ex.send(200, JSON.stringify({ vapid_public_key: creds.vapid_public_key, delivered_receipts: caller.webDeliveredReceipts }));
    };
  },
});
