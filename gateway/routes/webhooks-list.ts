import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { WebhookList } from '../../schemas/webhooks.ts';
import { httpRoute } from '../server/route.ts';

export const webhooksList = httpRoute({
  method: 'get',
  path: '/api/webhooks',
  auth: 'rest',
  summary: "The project's webhook endpoints with their health, oldest first",
  answers: { 200: WebhookList },
  handler: ({ deps }) => {
    const registry = new WebhookRegistry(deps.redis, deps.topology);
    return async ({ ex, caller }) => ex.send(200, JSON.stringify({ webhooks: await registry.list(caller.project) }));
  },
});
