import t from 'tap';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { deliveryCursor } from '../../engine/infra/validation/cursor.ts';
import type { EventView } from '../../schemas/queries.ts';
import { call, type Answer } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { BASE, bytes, errorPaths, get, otherProject, type EventRow } from './fixtures.ts';

const gw = await inProcessGateway(t);
const A = gw.project;
const B = await otherProject(gw);

/** Event number `i`: four share each ms, 6 users, 3 names, every 5th with an idempotency key. */
function eventRow(project: string, i: number, overrides: Partial<EventRow> = {}): EventRow {
  return {
    project,
    external_id: `u${(i * 7) % 6}`,
    name: `e${i % 3}`,
    properties: JSON.stringify({ n: i, sku: `A-${i}` }),
    idempotency_key: i % 5 === 0 ? `k${i}` : null,
    stream_id: `${BASE + i}-${i % 2}`,
    at: BASE + Math.floor(i / 4) * 1000,
    ...overrides,
  };
}

/** Newest first, as GET /api/events lists: (at, external_id, stream_id) descending. */
function newestFirst(a: EventRow, b: EventRow): number {
  return b.at - a.at || bytes(b.external_id, a.external_id) || bytes(b.stream_id, a.stream_id);
}

function shown(r: EventRow): EventView {
  return {
    external_id: r.external_id,
    name: r.name,
    properties: JSON.parse(r.properties) as EventView['properties'],
    idempotency_key: r.idempotency_key,
    at: new Date(r.at).toISOString(),
  };
}

const rowsA = Array.from({ length: 120 }, (_, i) => eventRow(A.project_id, i));
await insertRows(gw.clickhouse, 'events', rowsA.slice(0, 60));
await insertRows(gw.clickhouse, 'events', rowsA.slice(60));
await insertRows(gw.clickhouse, 'events', Array.from({ length: 20 }, (_, i) => eventRow(B.project_id, i)));
const newestA = [...rowsA].sort(newestFirst);

interface Page {
  events: EventView[];
  next_cursor: string | null;
}
const list = (params: Record<string, string | number>, key: string | null = A.rest_key): Promise<Answer> => get(gw, '/api/events', params, key);
const page = (a: Answer): Page => a.body as Page;

async function walk(key: string, params: Record<string, string | number>, between: (last: EventView) => Promise<void> = async () => {}): Promise<EventView[]> {
  const seen: EventView[] = [];
  let cursor: string | null = null;
  do {
    const answer = await list({ ...params, ...(cursor === null ? {} : { cursor }) }, key);
    if (answer.status !== 200) throw new Error(`${answer.status} ${JSON.stringify(answer.body)}`);
    const body = page(answer);
    seen.push(...body.events);
    cursor = body.next_cursor;
    const last = body.events.at(-1);
    if (cursor !== null && last !== undefined) await between(last);
  } while (cursor !== null);
  return seen;
}

t.test('lists the newest 100 events first, every field shown, properties as an object', async (t) => {
  const answer = await list({});
  t.equal(answer.status, 200);
  t.same(page(answer).events, newestA.slice(0, 100).map(shown));
  t.type(page(answer).next_cursor, 'string');
  t.strictSame(Object.keys(page(answer).events[0] ?? {}), ['external_id', 'name', 'properties', 'idempotency_key', 'at']);
});

t.test('each filter, alone and combined, returns exactly the matching events', async (t) => {
  const since = BASE + 5_000;
  const until = BASE + 20_000;
  const cases: [string, Record<string, string>, (r: EventRow) => boolean][] = [
    ['external_id', { external_id: 'u1' }, (r) => r.external_id === 'u1'],
    ['name', { name: 'e2' }, (r) => r.name === 'e2'],
    ['since (inclusive)', { since: new Date(since).toISOString() }, (r) => r.at >= since],
    ['until (exclusive)', { until: new Date(until).toISOString() }, (r) => r.at < until],
    ['all four', { external_id: 'u1', name: 'e1', since: new Date(since).toISOString(), until: new Date(until).toISOString() }, (r) => r.external_id === 'u1' && r.name === 'e1' && r.at >= since && r.at < until],
  ];
  for (const [name, params, match] of cases) {
    const want = newestA.filter(match);
    t.ok(want.length > 0 && want.length < rowsA.length, `${name}: ${want.length} events`);
    const answer = await list({ ...params, limit: 1000 });
    t.same(page(answer).events, want.map(shown), name);
    t.equal(page(answer).next_cursor, null);
  }
  t.same(page(await list({ name: "e1' OR 1=1 --" })).events, [], 'SQL in a value is inert');
});

t.test('following next_cursor returns every event exactly once, in order', async (t) => {
  t.same(await walk(A.rest_key, { limit: 9 }), newestA.map(shown));
  t.same(await walk(A.rest_key, { name: 'e0', limit: 4 }), newestA.filter((r) => r.name === 'e0').map(shown));
});

t.test('events written while a client pages through never make it repeat or skip one', async (t) => {
  const C = await otherProject(gw);
  const initial = Array.from({ length: 24 }, (_, i) => eventRow(C.project_id, i));
  await insertRows(gw.clickhouse, 'events', initial);
  const want = [...initial];
  let n = 0;
  const walked = await walk(C.rest_key, { limit: 5 }, async (last) => {
    const at = Date.parse(last.at);
    n++;
    await insertRows(gw.clickhouse, 'events', [
      // Newer than every page, and the same ms sorting before the cursor: already passed.
      eventRow(C.project_id, 100 + n, { at: BASE + 3_600_000, stream_id: `new-${n}` }),
      eventRow(C.project_id, 200 + n, { at, external_id: `${last.external_id}~`, stream_id: `passed-${n}` }),
    ]);
    // Same ms sorting after the cursor, and an older one: still ahead, so they must come.
    const ahead = [
      eventRow(C.project_id, 300 + n, { at, external_id: 'a', stream_id: `ahead-${n}` }),
      eventRow(C.project_id, 400 + n, { at: at - 1, stream_id: `late-${n}` }),
    ];
    await insertRows(gw.clickhouse, 'events', ahead);
    want.push(...ahead);
  });
  t.ok(n >= 4, `${n} inserts between pages`);
  t.same(walked, want.sort(newestFirst).map(shown));
});

t.test('rows of another project never show', async (t) => {
  const answer = await list({ limit: 1000 }, B.rest_key);
  t.equal(page(answer).events.length, 20);
  const mine = await list({ limit: 1000 });
  t.equal(page(mine).events.length, 120);
});

t.test('bad parameters: one 400 naming each; a deliveries cursor is refused', async (t) => {
  const answer = await call(`${gw.url}/api/events?name=&limit=5000&since=2026-11-01&status=sent&external_id=${'x'.repeat(129)}`, 'GET', A.rest_key);
  t.equal(answer.status, 400);
  t.same(errorPaths(answer).sort(), ['validation_failed /external_id', 'validation_failed /limit', 'validation_failed /name', 'validation_failed /since', 'validation_failed /status']);
  const other = await list({ cursor: deliveryCursor({ at: BASE, id: 'd-1' }) });
  t.equal(other.status, 400);
  t.same(errorPaths(other), ['validation_failed /cursor']);
  const twice = await call(`${gw.url}/api/events?limit=1&limit=2`, 'GET', A.rest_key);
  t.same(errorPaths(twice), ['validation_failed /limit']);
});

t.test('auth: REST key only', async (t) => {
  const none = await list({}, null);
  t.equal(none.status, 401);
  const sdk = await list({}, A.sdk_key);
  t.equal(sdk.status, 403);
  t.same(errorPaths(sdk), ['wrong_key_type ']);
});
