import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { CallerError } from '../../schemas/errors.ts';
import { WebhookParams, WebhookWithHealth } from '../../schemas/webhooks.ts';
import { httpRoute } from '../server/route.ts';

export const webhookGet = httpRoute({
  method: 'get',
  path: '/api/webhooks/{id}',
  auth: 'rest',
  summary: 'One webhook endpoint with its health',
  params: WebhookParams,
  answers: { 200: WebhookWithHealth },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const registry = new WebhookRegistry(deps.redis, deps.topology);
    return async ({ ex, caller, params }) => {
      const webhook = await registry.get(caller.project, params.id);
      if (webhook === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify(webhook));
    };
  },
});
