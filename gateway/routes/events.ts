import { eventCursor, readEventCursor } from '../../engine/infra/validation/cursor.ts';
import { listEvents } from '../../engine/infra/clickhouse/events.ts';
import { EventsPage, EventsQuery, PageLimits } from '../../schemas/queries.ts';
import { timeRange } from '../server/query-string.ts';
import { httpRoute } from '../server/route.ts';
import { answerFromClickHouse } from './query-answer.ts';

export const events = httpRoute({
  method: 'get',
  path: '/api/events',
  auth: 'rest',
  summary: 'Tracked events, newest first; follow next_cursor for the next page',
  query: EventsQuery,
  answers: { 200: EventsPage },
  handler:
    ({ deps }) =>
    ({ ex, caller, query: q }) =>
      answerFromClickHouse(deps, ex, async (ch) => {
        const filter = {
          ...(q.external_id === undefined ? {} : { external_id: q.external_id }),
          ...(q.name === undefined ? {} : { name: q.name }),
          ...timeRange(q),
        };
        // The schema's cursor format has decoded it once already: it is a position here.
        const after = q.cursor === undefined ? null : readEventCursor(q.cursor);
        const page = await listEvents(ch, caller.project, filter, q.limit ?? PageLimits.default, after);
        return { events: page.events, next_cursor: page.next === null ? null : eventCursor(page.next) };
      }),
});
