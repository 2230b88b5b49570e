import t from 'tap';
import { insertRows } from '../../engine/clickhouse/insert.ts';
import { deliveryCursor, eventCursor } from '../../gateway/cursor.ts';
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

/** Times no record can have: a ClickHouse DateTime64 holds 1900-01-01 to 2299-12-31. */
const absurd = [-Number.MAX_SAFE_INTEGER, -9e15, Date.UTC(1899, 11, 31, 23, 59, 59, 999), Date.UTC(2300, 0, 1), 9e15, Number.MAX_SAFE_INTEGER];
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
  for (const at of [Date.UTC(1900, 0, 1), Date.UTC(2300, 0, 1) - 1]) {
    const deliveries = await get(gw, '/api/deliveries', { cursor: deliveryCursor({ at, id: 'x' }) }, A.rest_key);
    t.equal(deliveries.status, 200, `deliveries at ${new Date(at).toISOString()}`);
    const listed = await get(gw, '/api/events', { cursor: eventCursor({ at, external_id: 'x', stream_id: '1-0' }) }, A.rest_key);
    t.equal(listed.status, 200, `events at ${new Date(at).toISOString()}`);
  }
  const newest = await get(gw, '/api/events', { cursor: eventCursor({ at: Date.UTC(2300, 0, 1) - 1, external_id: 'x', stream_id: '1-0' }) }, A.rest_key);
  t.equal((newest.body as { events: unknown[] }).events.length, 30, 'a cursor past every record lists them all');
});
