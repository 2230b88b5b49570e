import type { TemplatedApp } from 'uWebSockets.js';
import { deliveryStats, listDeliveries } from '../engine/clickhouse/deliveries.ts';
import {
  DeliveriesQuery,
  DeliveryStatsQuery,
  PageLimits,
  type DeliveriesQuery as DeliveriesQueryT,
  type DeliveryFilter,
  type DeliveryStatsQuery as DeliveryStatsQueryT,
} from '../schemas/queries.ts';
import type { GatewayDeps } from './context.ts';
import { deliveryCursor, readDeliveryCursor } from './cursor.ts';
import { queryRoute } from './query-answer.ts';
import { queryChecker, timeRange } from './query-string.ts';

export const deliveriesRoutes = {
  list: { path: '/api/deliveries', allow: 'GET' },
  stats: { path: '/api/deliveries/stats', allow: 'GET' },
} as const;

const checkList = queryChecker<DeliveriesQueryT>(DeliveriesQuery, ['limit']);
const checkStats = queryChecker<DeliveryStatsQueryT>(DeliveryStatsQuery);

/**
 * `GET /api/deliveries` and `GET /api/deliveries/stats` (API.md section 5, REST key): delivery
 * records from ClickHouse, filtered by the query string; every bad parameter is a 400 naming it.
 */
export function registerDeliveriesRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  app.get(
    deliveriesRoutes.list.path,
    queryRoute(deps, {
      path: deliveriesRoutes.list.path,
      check: checkList,
      read: async (ch, project, q) => {
        // The schema's cursor format has decoded it once already: it is a position here.
        const after = q.cursor === undefined ? null : readDeliveryCursor(q.cursor);
        const page = await listDeliveries(ch, project, deliveryFilter(q), q.limit ?? PageLimits.default, after);
        return { deliveries: page.deliveries, next_cursor: page.next === null ? null : deliveryCursor(page.next) };
      },
    }),
  );
  app.get(
    deliveriesRoutes.stats.path,
    queryRoute(deps, {
      path: deliveriesRoutes.stats.path,
      check: checkStats,
      read: async (ch, project, q) => ({ groups: await deliveryStats(ch, project, deliveryFilter(q), q.group_by) }),
    }),
  );
}

/** The engine's filter from checked parameters. */
function deliveryFilter(q: DeliveriesQueryT | DeliveryStatsQueryT): DeliveryFilter {
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
