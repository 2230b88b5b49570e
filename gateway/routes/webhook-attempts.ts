import { readWebhookAttemptCursor, webhookAttemptCursor } from '../../engine/infra/validation/cursor.ts';
import { listWebhookAttempts } from '../../engine/infra/clickhouse/webhook-attempts.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { CallerError } from '../../schemas/errors.ts';
import { PageLimits } from '../../schemas/queries.ts';
import { WebhookAttemptPage, WebhookAttemptsQuery, WebhookParams } from '../../schemas/webhooks.ts';
import { timeRange } from '../server/query-string.ts';
import { httpRoute } from '../server/route.ts';
import { answerFromClickHouse } from './query-answer.ts';

export const webhookAttempts = httpRoute({
  method: 'get',
  path: '/api/webhooks/{id}/attempts',
  auth: 'rest',
  summary: "A webhook endpoint's attempts, newest first; follow next_cursor for the next page",
  params: WebhookParams,
  query: WebhookAttemptsQuery,
  answers: { 200: WebhookAttemptPage },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const registry = new WebhookRegistry(deps.redis, deps.topology);
    return async ({ ex, caller, params, query: q }) => {
      // The endpoint is looked up first: another project's id is as unknown as a made-up one.
      if ((await registry.get(caller.project, params.id)) === null) throw new CallerError('not_found');
      await answerFromClickHouse(deps, ex, async (ch) => {
        const filter = {
          ...(q.status === undefined ? {} : { status: q.status }),
          ...(q.event_type === undefined ? {} : { event_type: q.event_type }),
          ...timeRange(q),
        };
        // The schema's cursor format has decoded it once already: it is a position here.
        const after = q.cursor === undefined ? null : readWebhookAttemptCursor(q.cursor);
        const page = await listWebhookAttempts(ch, caller.project, params.id, filter, q.limit ?? PageLimits.default, after);
        return { attempts: page.attempts, next_cursor: page.next === null ? null : webhookAttemptCursor(page.next) };
      });
    };
  },
});
