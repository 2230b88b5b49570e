import t from 'tap';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { eventCursor } from '../../engine/infra/validation/cursor.ts';
import type { MessageDelivery } from '../../schemas/queries.ts';
import { call, type Answer } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { BASE, deliveryRow, errorPaths, get, newestDeliveryFirst, otherProject, shown, type DeliveryRow } from './fixtures.ts';

// One gateway (one embedded ClickHouse per process) for the file; tests that add rows use a project of their own.
const gw = await inProcessGateway(t);
const A = gw.project;
const B = await otherProject(gw);

const rowsA = Array.from({ length: 150 }, (_, i) => deliveryRow(A.project_id, i));
// The other project reuses every id, user and notification of the first.
const rowsB = Array.from({ length: 40 }, (_, i) => deliveryRow(B.project_id, i));
// Several inserts, so pages span several parts.
for (let from = 0; from < rowsA.length; from += 50) await insertRows(gw.clickhouse, 'message_deliveries', rowsA.slice(from, from + 50));
await insertRows(gw.clickhouse, 'message_deliveries', rowsB);
const newestA = [...rowsA].sort(newestDeliveryFirst);

interface Page {
  deliveries: MessageDelivery[];
  next_cursor: string | null;
}

const list = (params: Record<string, string | number>, key: string | null = A.rest_key): Promise<Answer> => get(gw, '/api/deliveries', params, key);
const page = (a: Answer): Page => a.body as Page;
const ids = (a: Answer): string[] => page(a).deliveries.map((d) => d.id);
const iso = (ms: number): string => new Date(ms).toISOString();

/** Follows next_cursor from the first page to the last, calling `between` after each page. */
async function walk(key: string, params: Record<string, string | number>, between: (last: MessageDelivery) => Promise<void> = async () => {}): Promise<{ ids: string[]; pages: number }> {
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const answer = await list({ ...params, ...(cursor === null ? {} : { cursor }) }, key);
    if (answer.status !== 200) throw new Error(`page ${pages}: ${answer.status} ${JSON.stringify(answer.body)}`);
    const body = page(answer);
    pages++;
    seen.push(...body.deliveries.map((d) => d.id));
    cursor = body.next_cursor;
    const last = body.deliveries.at(-1);
    if (cursor !== null && last !== undefined) await between(last);
  } while (cursor !== null);
  return { ids: seen, pages };
}

t.test('lists the newest 100 records first by default, with a cursor to the rest', async (t) => {
  const answer = await list({});
  t.equal(answer.status, 200);
  t.same(ids(answer), newestA.slice(0, 100).map((r) => r.id));
  t.type(page(answer).next_cursor, 'string');
});

t.test('a record has every field of docs/api.md#the-delivery-record, `at` in ISO 8601 with ms', async (t) => {
  // Row 14: failed SMS, retrying, twilio_21610; rows 14, 34, 54 ... share u4 and n2.
  const row = rowsA[14] as DeliveryRow;
  const answer = await list({ external_id: 'u4', notification_id: 'n2', limit: 1000 });
  const found = page(answer).deliveries.find((d) => d.id === row.id);
  t.same(found, shown(row));
  t.strictSame(Object.keys(found ?? {}), Object.keys(shown(row)));
  t.match(found?.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

const since = BASE + 10_000;
const until = BASE + 20_000;
const filters: [string, Record<string, string>, (r: DeliveryRow) => boolean][] = [
  ['status=failed', { status: 'failed' }, (r) => r.status === 'failed'],
  ['status=skipped', { status: 'skipped' }, (r) => r.status === 'skipped'],
  ['channel=SMS', { channel: 'SMS' }, (r) => r.channel === 'SMS'],
  ['subscription_type=WEB_PUSH', { subscription_type: 'WEB_PUSH' }, (r) => r.subscription_type === 'WEB_PUSH'],
  ['external_id=u3', { external_id: 'u3' }, (r) => r.external_id === 'u3'],
  ['notification_id=n1', { notification_id: 'n1' }, (r) => r.notification_id === 'n1'],
  ['error_code=opted_out', { error_code: 'opted_out' }, (r) => r.error_code === 'opted_out'],
  ['since (inclusive)', { since: iso(since) }, (r) => r.at >= since],
  ['until (exclusive)', { until: iso(until) }, (r) => r.at < until],
  // The same instant as since, written with an offset (its `+` travels as %2B).
  ['since with a +02:00 offset', { since: '2026-11-01T02:00:10+02:00' }, (r) => r.at >= since],
  ['status, channel, since and until', { status: 'sent', channel: 'PUSH', since: iso(since), until: iso(until) }, (r) => r.status === 'sent' && r.channel === 'PUSH' && r.at >= since && r.at < until],
  ['external_id and notification_id', { external_id: 'u4', notification_id: 'n2' }, (r) => r.external_id === 'u4' && r.notification_id === 'n2'],
  ['subscription_type and error_code', { subscription_type: 'IOS_PUSH', error_code: 'apns_410_Unregistered' }, (r) => r.subscription_type === 'IOS_PUSH' && r.error_code === 'apns_410_Unregistered'],
  ['filters nothing matches together', { channel: 'EMAIL', error_code: 'twilio_21610' }, () => false],
];

t.test('each filter, alone and combined, returns exactly the matching records, newest first', async (t) => {
  for (const [name, params, match] of filters) {
    const expected = newestA.filter(match).map((r) => r.id);
    const answer = await list({ ...params, limit: 1000 });
    t.equal(answer.status, 200, name);
    t.same(ids(answer), expected, `${name}: ${expected.length} records`);
    t.equal(page(answer).next_cursor, null, `${name}: one page`);
  }
  // The fixture makes each single filter a real cut: neither everything nor nothing.
  for (const [name, , match] of filters.slice(0, 10)) {
    const n = rowsA.filter(match).length;
    t.ok(n > 0 && n < rowsA.length, `${name} matches ${n} of ${rowsA.length}`);
  }
});

t.test('limit bounds the page: 1 and 1000 work, the last page has no cursor', async (t) => {
  const one = await list({ limit: 1 });
  t.same(ids(one), [newestA[0]?.id]);
  t.type(page(one).next_cursor, 'string');
  const all = await list({ limit: 1000 });
  t.equal(ids(all).length, 150);
  t.equal(page(all).next_cursor, null);
  // u3 has exactly 15 records: a full last page ends without a cursor to an empty page.
  const exact = await list({ external_id: 'u3', limit: 15 });
  t.equal(ids(exact).length, 15);
  t.equal(page(exact).next_cursor, null);
  for (const bad of ['0', '1001', '-1', '1.5', 'ten', '', '1e2']) {
    const answer = await get(gw, '/api/deliveries', { limit: bad }, A.rest_key);
    t.equal(answer.status, 400, `limit=${bad}`);
    t.same(errorPaths(answer), ['validation_failed /limit'], `limit=${bad} is named`);
  }
});

t.test('following next_cursor returns every record exactly once, in order', async (t) => {
  const all = await walk(A.rest_key, { limit: 7 });
  t.same(all.ids, newestA.map((r) => r.id));
  t.equal(all.pages, Math.ceil(150 / 7));
  const push = await walk(A.rest_key, { channel: 'PUSH', limit: 5 });
  t.same(push.ids, newestA.filter((r) => r.channel === 'PUSH').map((r) => r.id));
  const u3 = await walk(A.rest_key, { external_id: 'u3', limit: 5 });
  t.equal(u3.pages, 3, '15 records in pages of 5: no empty fourth page');
});

t.test('records written while a client pages through never make it repeat or skip a record', async (t) => {
  const C = await otherProject(gw);
  const initial = Array.from({ length: 30 }, (_, i) => deliveryRow(C.project_id, i));
  await insertRows(gw.clickhouse, 'message_deliveries', initial);
  const expected = [...initial];
  const hidden: string[] = [];
  let n = 0;
  const walked = await walk(C.rest_key, { limit: 4 }, async (last) => {
    const at = Date.parse(last.at);
    n++;
    const fresh = [
      // Newer than every page: belongs before the pages already read.
      deliveryRow(C.project_id, 1000 + n, { id: `new-${n}`, at: BASE + 3_600_000 }),
      // Same ms as the cursor row, sorting before it ('~' is above every id character): already passed.
      deliveryRow(C.project_id, 2000 + n, { id: `${last.id}~`, at }),
      // Same ms as the cursor row, sorting after it: still ahead, so it must come.
      deliveryRow(C.project_id, 3000 + n, { id: `a-${n}`, at }),
      // Older than the cursor (written late): still ahead, so it must come.
      deliveryRow(C.project_id, 4000 + n, { id: `late-${n}`, at: at - 1 }),
    ];
    await insertRows(gw.clickhouse, 'message_deliveries', fresh);
    hidden.push(fresh[0]?.id ?? '', fresh[1]?.id ?? '');
    expected.push(fresh[2] as DeliveryRow, fresh[3] as DeliveryRow);
  });
  t.ok(n >= 7, `${n} inserts between pages`);
  t.equal(new Set(walked.ids).size, walked.ids.length, 'no record twice');
  t.same(walked.ids, expected.sort(newestDeliveryFirst).map((r) => r.id), 'every record ahead of the cursor, in order');
  for (const id of hidden) t.notOk(walked.ids.includes(id), `${id} was behind the cursor`);
});

t.test('receipt: the latest receipt of the notification and user, null without one', async (t) => {
  const C = await otherProject(gw);
  const p = C.project_id;
  const r = (i: number, notification: string, user: string): DeliveryRow => deliveryRow(p, i, { notification_id: notification, external_id: user });
  const rows = [r(1, 'nA', 'uX'), r(2, 'nA', 'uY'), r(3, 'nB', 'uX'), r(4, 'nB', 'uY')];
  await insertRows(gw.clickhouse, 'message_deliveries', rows);
  const receipt = (project: string, n: string, user: string, kind: string, at: number, k: number) => ({
    project,
    svc_message_id: n,
    external_id: user,
    receipt: kind,
    stream_id: `${at}-${k}`,
    at,
  });
  // Inserted out of time order: the latest `at` wins, not the last insert.
  await insertRows(gw.clickhouse, 'receipts', [receipt(p, 'nA', 'uX', 'clicked', BASE + 2000, 1), receipt(p, 'nA', 'uX', 'opened', BASE + 3000, 2)]);
  await insertRows(gw.clickhouse, 'receipts', [
    receipt(p, 'nA', 'uX', 'delivered', BASE + 1000, 3),
    // Two at the same ms: the furthest (clicked) wins whatever the order.
    receipt(p, 'nB', 'uX', 'clicked', BASE + 5000, 4),
    receipt(p, 'nB', 'uX', 'delivered', BASE + 5000, 5),
    receipt(p, 'nB', 'uY', 'delivered', BASE + 5000, 6),
    // (nA, uY) has a receipt only in another project.
    receipt(A.project_id, 'nA', 'uY', 'opened', BASE + 9000, 7),
  ]);
  const answer = await list({}, C.rest_key);
  const byId = new Map(page(answer).deliveries.map((d) => [d.id, d.receipt]));
  t.equal(byId.get(rows[0]?.id ?? ''), 'opened', 'nA/uX: latest by at');
  t.equal(byId.get(rows[1]?.id ?? ''), null, 'nA/uY: none in this project');
  t.equal(byId.get(rows[2]?.id ?? ''), 'clicked', 'nB/uX: tie at one ms goes to clicked');
  t.equal(byId.get(rows[3]?.id ?? ''), 'delivered', 'nB/uY');
  t.same(page(answer).deliveries, [...rows].sort(newestDeliveryFirst).map((row) => shown(row, byId.get(row.id) ?? null)));
});

t.test('rows of another project never show', async (t) => {
  const answer = await list({ external_id: 'u3', limit: 1000 }, B.rest_key);
  t.same(ids(answer), rowsB.filter((r) => r.external_id === 'u3').sort(newestDeliveryFirst).map((r) => r.id));
  const everything = await list({ limit: 1000 }, B.rest_key);
  t.equal(ids(everything).length, 40);
});

t.test('values are parameters: SQL in them is inert and found only as text', async (t) => {
  const C = await otherProject(gw);
  const odd = `x' OR 1=1 -- "{project:String}" \\ ünï côde`;
  await insertRows(gw.clickhouse, 'message_deliveries', [deliveryRow(C.project_id, 1), deliveryRow(C.project_id, 2, { external_id: odd })]);
  for (const value of ["x' OR 1=1 --", "' OR ''='", 'u1) OR (1=1', '{project:String}', "x'; DROP TABLE message_deliveries; --"]) {
    const answer = await list({ external_id: value }, C.rest_key);
    t.equal(answer.status, 200, value);
    t.same(ids(answer), [], `${value} matches nothing`);
  }
  const exact = await list({ external_id: odd }, C.rest_key);
  t.same(ids(exact), [`d-074-2`], 'the odd id itself is found (space sent as +)');
  const encoded = await call(`${gw.url}/api/deliveries?external_id=${encodeURIComponent(odd)}`, 'GET', C.rest_key);
  t.same(ids(encoded), [`d-074-2`], 'and sent as %20');
  t.equal(ids(await list({ limit: 1000 })).length, 150, 'the table is intact');
});

t.test('auth: REST key only', async (t) => {
  const none = await list({}, null);
  t.equal(none.status, 401);
  t.same(errorPaths(none), ['missing_key ']);
  const unknown = await list({}, 'rest_unknown');
  t.equal(unknown.status, 401);
  t.same(errorPaths(unknown), ['invalid_key ']);
  const sdk = await list({}, A.sdk_key);
  t.equal(sdk.status, 403);
  t.same(errorPaths(sdk), ['wrong_key_type ']);
});

t.test('bad parameters: one 400 naming each', async (t) => {
  const query = 'status=bogus&channel=PUSHY&subscription_type=PUSH&limit=0&since=yesterday&until=2026-11-01T10:00:00&foo=1&cursor=abc&external_id=';
  const answer = await call(`${gw.url}/api/deliveries?${query}`, 'GET', A.rest_key);
  t.equal(answer.status, 400);
  t.same(errorPaths(answer).sort(), [
    'validation_failed /channel',
    'validation_failed /cursor',
    'validation_failed /external_id',
    'validation_failed /foo',
    'validation_failed /limit',
    'validation_failed /since',
    'validation_failed /status',
    'validation_failed /subscription_type',
    'validation_failed /until',
  ]);
  const messages = (answer.body as { errors: { message: string }[] }).errors.map((e) => e.message);
  t.ok(messages.includes('foo: is not allowed'), 'an unknown parameter is named');
  const cases: [string, string[]][] = [
    ['status=sent&status=failed', ['validation_failed /status']],
    ['external_id=%E0%A4%A', ['validation_failed /external_id']],
    ['external_id=%FF', ['validation_failed /external_id']],
    [`external_id=${'x'.repeat(129)}`, ['validation_failed /external_id']],
    ['__proto__=1', ['validation_failed /__proto__']],
    ['a%2Fb=1', ['validation_failed /a~1b']],
    ['since=2026-12-31T23:59:60Z', ['validation_failed /since']],
    ['group_by=status', ['validation_failed /group_by']],
  ];
  for (const [q, expected] of cases) {
    const a = await call(`${gw.url}/api/deliveries?${q}`, 'GET', A.rest_key);
    t.equal(a.status, 400, q);
    t.same(errorPaths(a), expected, q);
  }
});

t.test('a cursor that was edited, cut or made for events is refused', async (t) => {
  const first = page(await list({ limit: 2 })).next_cursor ?? '';
  const flip = (c: string, i: number): string => c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1);
  const events = eventCursor({ at: BASE, external_id: 'u1', stream_id: '1-0' });
  for (const bad of [flip(first, 3), flip(first, first.length - 2), first.slice(0, -4), `${first}A`, 'e30', events]) {
    const answer = await list({ cursor: bad });
    t.equal(answer.status, 400, bad);
    t.same(errorPaths(answer), ['validation_failed /cursor']);
  }
  t.equal((await list({ cursor: first })).status, 200, 'the cursor itself works');
});

t.test('OPTIONS answers the preflight and other methods get 405', async (t) => {
  const pre = await fetch(`${gw.url}/api/deliveries`, { method: 'OPTIONS' });
  t.equal(pre.status, 204);
  const post = await call(`${gw.url}/api/deliveries`, 'POST', A.rest_key, {});
  t.equal(post.status, 405);
  t.equal(post.headers.get('allow'), 'GET');
});
