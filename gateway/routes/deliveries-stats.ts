import { deliveryStats } from '../../engine/infra/clickhouse/deliveries.ts';
import { DeliveryStats, DeliveryStatsQuery } from '../../schemas/queries.ts';
import { httpRoute } from '../server/route.ts';
import { deliveryFilter } from './deliveries.ts';
import { answerFromClickHouse } from './query-answer.ts';

export const deliveriesStats = httpRoute({
  method: 'get',
  path: '/api/deliveries/stats',
  auth: 'rest',
  summary: 'Delivery record counts per group_by value',
  query: DeliveryStatsQuery,
  answers: { 200: DeliveryStats },
  handler:
    ({ deps }) =>
    ({ ex, caller, query: q }) =>
      answerFromClickHouse(deps, ex, async (ch) => ({ groups: await deliveryStats(ch, caller.project, deliveryFilter(q), q.group_by) })),
});
