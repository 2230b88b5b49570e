import { listDeliveries } from '../../engine/infra/clickhouse/deliveries.ts';
import { deliveryCursor, readDeliveryCursor } from '../../engine/infra/validation/cursor.ts';
import { DeliveriesPage, DeliveriesQuery, PageLimits, type DeliveryFilter, type DeliveryStatsQuery } from '../../schemas/queries.ts';
import { timeRange } from '../server/query-string.ts';
import { httpRoute } from '../server/route.ts';
import { answerFromClickHouse } from './query-answer.ts';

export const deliveries = httpRoute({
  method: 'get',
  path: '/api/deliveries',
  auth: 'rest',
  summary: 'Delivery records, newest first; follow next_cursor for the next page',
  query: DeliveriesQuery,
  answers: { 200: DeliveriesPage },
  handler:
    ({ deps }) =>
    ({ ex, caller, query: q }) =>
      answerFromClickHouse(deps, ex, async (ch) => {
        // The schema's cursor format has decoded it once already: it is a position here.
        const after = q.cursor === undefined ? null : readDeliveryCursor(q.cursor);
        const page = await listDeliveries(ch, caller.project, deliveryFilter(q), q.limit ?? PageLimits.default, after);
        return { deliveries: page.deliveries, next_cursor: page.next === null ? null : deliveryCursor(page.next) };
      }),
});

/** The engine's filter from checked parameters (shared by /api/deliveries/stats). */
export function deliveryFilter(q: Omit<DeliveryStatsQuery, 'group_by'>): DeliveryFilter {
  const { status, channel, subscription_type, external_id, notification_id, error_code } = q;
  return {
    ...(status === undefined ? {} : { status }),
    ...(channel === undefined ? {} : { channel }),
    ...(subscription_type === undefined ? {} : { subscription_type }),
    ...(external_id === undefined ? {} : { external_id }),
    ...(notification_id === undefined ? {} : { notification_id }),
    ...(error_code === undefined ? {} : { error_code }),
    ...timeRange(q),
  };
}
