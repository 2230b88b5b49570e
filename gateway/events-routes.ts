import type { TemplatedApp } from 'uWebSockets.js';
import { listEvents } from '../engine/clickhouse/events.ts';
import { EventsQuery, PageLimits, type EventFilter, type EventsQuery as EventsQueryT } from '../schemas/queries.ts';
import type { GatewayDeps } from './context.ts';
import { eventCursor, readEventCursor } from './cursor.ts';
import { queryRoute } from './query-answer.ts';
import { queryChecker, timeRange } from './query-string.ts';

export const eventsRoutes = {
  list: { path: '/api/events', allow: 'GET' },
} as const;

const check = queryChecker<EventsQueryT>(EventsQuery, ['limit']);

/** `GET /api/events` (API.md section 6, REST key): tracked events from ClickHouse, newest first. */
export function registerEventsRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  app.get(
    eventsRoutes.list.path,
    queryRoute(deps, {
      path: eventsRoutes.list.path,
      check,
      read: async (ch, project, q) => {
        const filter: EventFilter = {
          ...(q.external_id === undefined ? {} : { external_id: q.external_id }),
          ...(q.name === undefined ? {} : { name: q.name }),
          ...timeRange(q),
        };
        // The schema's cursor format has decoded it once already: it is a position here.
        const after = q.cursor === undefined ? null : readEventCursor(q.cursor);
        const page = await listEvents(ch, project, filter, q.limit ?? PageLimits.default, after);
        return { events: page.events, next_cursor: page.next === null ? null : eventCursor(page.next) };
      },
    }),
  );
}
