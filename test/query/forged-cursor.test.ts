import t from 'tap';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { deliveryCursor, eventCursor } from '../../engine/infra/validation/cursor.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { BASE, deliveryRow, get, type EventRow } from './fixtures.ts';

const gw = await inProcessGateway(t);
const A = gw.project;
await insertRows(gw.clickhouse, 'message_deliveries', Array.from({ length: 30 }, (_, i) => deliveryRow(A.project_id, i)));
const events: EventRow[] = Array.from({ length: 30 }, (_, i) => ({
  project: A.project_id,
  external_id: `u${i}`,
  name: 'e',
  properties: '{}',
  idempotency_key: null,
  stream_id: `${BASE + i}-0`,
  at: BASE + i,
}));
await insertRows(gw.clickhouse, 'events', events);

/** The first and last instant a record can have: an API date-time has years 0000 to 9999. */
const first = Date.parse('0000-01-01T00:00:00.000Z');
const last = Date.parse('9999-12-31T23:59:59.999Z');
/** Times no record can have. */
const absurd = [-Number.MAX_SAFE_INTEGER, -9e15, first - 1, last + 1, 9e15, Number.MAX_SAFE_INTEGER];
const cursorError = (listing: string) => ({
  errors: [{ code: 'validation_failed', message: `cursor: must be a next_cursor of GET /api/${listing}, unchanged`, path: '/cursor' }],
});

t.test('regression: a forged deliveries cursor with an absurd time is 400 naming cursor (it was 503)', async (t) => {
  for (const at of absurd) {
    const answer = await get(gw, '/api/deliveries', { cursor: deliveryCursor({ at, id: 'x' }) }, A.rest_key);
    t.same([answer.status, answer.body], [400, cursorError('deliveries')], `at ${at}`);
  }
});

t.test('regression: a forged events cursor with an absurd time is 400 naming cursor', async (t) => {
  for (const at of absurd) {
    const answer = await get(gw, '/api/events', { cursor: eventCursor({ at, external_id: 'x', stream_id: '1-0' }) }, A.rest_key);
    t.same([answer.status, answer.body], [400, cursorError('events')], `at ${at}`);
  }
});

t.test('cursors at the first and last instant a record can have still page', async (t) => {
  for (const at of [first, last]) {
    const deliveries = await get(gw, '/api/deliveries', { cursor: deliveryCursor({ at, id: 'x' }) }, A.rest_key);
    t.equal(deliveries.status, 200, `deliveries at ${new Date(at).toISOString()}`);
    const listed = await get(gw, '/api/events', { cursor: eventCursor({ at, external_id: 'x', stream_id: '1-0' }) }, A.rest_key);
    t.equal(listed.status, 200, `events at ${new Date(at).toISOString()}`);
  }
  const newest = await get(gw, '/api/events', { cursor: eventCursor({ at: last, external_id: 'x', stream_id: '1-0' }) }, A.rest_key);
  t.equal((newest.body as { events: unknown[] }).events.length, 30, 'a cursor past every record lists them all');
});

t.test('events timestamped in years 0001 and 9999 page through with their own cursors', async (t) => {
  const edges = ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z'].map((iso, i) => ({ ...events[0], external_id: `edge${i}`, stream_id: `${i}-9`, at: Date.parse(iso) }) as EventRow);
  await insertRows(gw.clickhouse, 'events', edges);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const answer = await get(gw, '/api/events', { limit: 1, ...(cursor === null ? {} : { cursor }) }, A.rest_key);
    t.equal(answer.status, 200);
    const page = answer.body as { events: { external_id: string }[]; next_cursor: string | null };
    seen.push(...page.events.map((e) => e.external_id));
    cursor = page.next_cursor;
  } while (cursor !== null && seen.length <= 40);
  t.equal(seen.length, 32, 'every event once');
  t.same([seen[0], seen.at(-1)], ['edge1', 'edge0'], 'newest year 9999 first, year 0001 last');
});
