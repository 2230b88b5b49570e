import { outboundPolicy, refusedUrl } from '../../engine/infra/outbound/guard.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { CallerError } from '../../schemas/errors.ts';
import { Webhook, WebhookBody } from '../../schemas/webhooks.ts';
import { httpRoute } from '../server/route.ts';

export const webhooksCreate = httpRoute({
  method: 'post',
  path: '/api/webhooks',
  auth: 'rest',
  summary: 'Register a webhook endpoint for some event types; answers it with its signing secret',
  body: { schema: WebhookBody, limit: 16 * 1024 },
  answers: { 201: Webhook },
  handler: ({ deps }) => {
    const registry = new WebhookRegistry(deps.redis, deps.topology);
    const policy = outboundPolicy(deps.config);
    return async ({ ex, caller, body }) => {
      // The engine connects to it: the outbound guard's rules hold at registration (docs/api.md#outbound-urls).
      const why = refusedUrl(policy, 'webhook', body.url);
      if (why !== undefined) throw new CallerError('validation_failed', [{ code: 'validation_failed', message: `url: ${why}`, path: '/url' }]);
      ex.send(201, JSON.stringify(await registry.create(caller.project, body)));
    };
  },
});
