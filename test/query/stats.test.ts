import t from 'tap';
import { deliveryStats, statsQueryFor } from '../../engine/infra/clickhouse/deliveries.ts';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import type { DeliveryFilter, DeliveryGroup, GroupBy } from '../../schemas/queries.ts';
import { call, type Answer } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { BASE, bytes, deliveryRow, errorPaths, get, otherProject, type DeliveryRow } from './fixtures.ts';

const gw = await inProcessGateway(t);
const A = gw.project;
const B = await otherProject(gw);

const HOUR = 3_600_000;
// 90 records over three hours: the fixture's at, then each third of them moved an hour later, and
// one more hour for the last third, so the hour groups differ in size.
const rowsA = Array.from({ length: 90 }, (_, i) => deliveryRow(A.project_id, i, { at: BASE + (i < 50 ? 0 : i < 80 ? HOUR : 2 * HOUR) + i * 1000 }));
await insertRows(gw.clickhouse, 'message_deliveries', rowsA);
await insertRows(gw.clickhouse, 'message_deliveries', Array.from({ length: 30 }, (_, i) => deliveryRow(B.project_id, i, { status: 'failed', error_code: 'timeout' })));

const stats = (params: Record<string, string>, key: string | null = A.rest_key): Promise<Answer> => get(gw, '/api/deliveries/stats', params, key);
const groups = (a: Answer): DeliveryGroup[] => (a.body as { groups: DeliveryGroup[] }).groups;

/** Hand count: count per key, largest first, ties by key (null last, as ClickHouse sorts it). */
function expected(rows: DeliveryRow[], key: (r: DeliveryRow) => string | null): DeliveryGroup[] {
  const counts = new Map<string | null, number>();
  for (const r of rows) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
  return [...counts]
    .map(([k, count]) => ({ key: k, count }))
    .sort((a, b) => b.count - a.count || (a.key === null ? 1 : b.key === null ? -1 : bytes(a.key, b.key)));
}

/** Hand count per hour start (ISO 8601), in time order. */
function expectedHours(rows: DeliveryRow[]): DeliveryGroup[] {
  const counts = new Map<number, number>();
  for (const r of rows) {
    const hour = Math.floor(r.at / HOUR) * HOUR;
    counts.set(hour, (counts.get(hour) ?? 0) + 1);
  }
  return [...counts].sort(([a], [b]) => a - b).map(([hour, count]) => ({ key: new Date(hour).toISOString(), count }));
}

const byKey: Record<Exclude<GroupBy, 'hour'>, (r: DeliveryRow) => string | null> = {
  status: (r) => r.status,
  channel: (r) => r.channel,
  error_code: (r) => r.error_code,
  subscription_type: (r) => r.subscription_type,
  notification_id: (r) => r.notification_id,
};

/** The hand count of `rows` matching `filter`, grouped as the API groups them. */
function handCount(rows: DeliveryRow[], filter: DeliveryFilter, groupBy: GroupBy): DeliveryGroup[] {
  const { since, until, ...equal } = filter;
  const matching = rows.filter(
    (r) =>
      (since === undefined || r.at >= since) &&
      (until === undefined || r.at < until) &&
      Object.entries(equal).every(([column, value]) => r[column as keyof typeof equal] === value),
  );
  return groupBy === 'hour' ? expectedHours(matching) : expected(matching, byKey[groupBy]);
}

t.test('counts per status, channel, error_code, subscription_type and notification_id, largest first', async (t) => {
  const keys: [string, (r: DeliveryRow) => string | null][] = [
    ['status', (r) => r.status],
    ['channel', (r) => r.channel],
    ['error_code', (r) => r.error_code],
    ['subscription_type', (r) => r.subscription_type],
    ['notification_id', (r) => r.notification_id],
  ];
  for (const [groupBy, key] of keys) {
    const answer = await stats({ group_by: groupBy });
    t.equal(answer.status, 200, groupBy);
    const want = expected(rowsA, key);
    t.ok(want.length > 1, `${groupBy}: ${want.length} groups`);
    t.same(groups(answer), want, groupBy);
  }
});

t.test('records without a value form the group null (error_code of sent records)', async (t) => {
  const answer = await stats({ group_by: 'error_code' });
  const none = groups(answer).find((g) => g.key === null);
  t.same(none, { key: null, count: rowsA.filter((r) => r.status === 'sent').length });
  t.equal(groups(answer)[0]?.key, null, 'sent is the largest group');
});

t.test('hour: ISO 8601 hour starts in time order', async (t) => {
  const answer = await stats({ group_by: 'hour' });
  t.same(groups(answer), [
    { key: '2026-11-01T00:00:00.000Z', count: 50 },
    { key: '2026-11-01T01:00:00.000Z', count: 30 },
    { key: '2026-11-01T02:00:00.000Z', count: 10 },
  ]);
});

t.test('the filters of GET /api/deliveries narrow the counts', async (t) => {
  const since = BASE + HOUR;
  const answer = await stats({ group_by: 'hour', since: new Date(since).toISOString(), channel: 'PUSH' });
  const push = rowsA.filter((r) => r.at >= since && r.channel === 'PUSH');
  t.same(groups(answer), [
    { key: '2026-11-01T01:00:00.000Z', count: push.filter((r) => r.at < BASE + 2 * HOUR).length },
    { key: '2026-11-01T02:00:00.000Z', count: push.filter((r) => r.at >= BASE + 2 * HOUR).length },
  ]);
  const failedSms = await stats({ group_by: 'error_code', status: 'failed', channel: 'SMS' });
  t.same(groups(failedSms), expected(rowsA.filter((r) => r.status === 'failed' && r.channel === 'SMS'), (r) => r.error_code));
  const nothing = await stats({ group_by: 'status', external_id: "x' OR 1=1 --" });
  t.same(groups(nothing), [], 'no records, no groups');
});

t.test('another project is counted apart', async (t) => {
  const answer = await stats({ group_by: 'status' }, B.rest_key);
  t.same(groups(answer), [{ key: 'failed', count: 30 }]);
  const mine = await stats({ group_by: 'error_code' });
  t.notOk(groups(mine).some((g) => g.key === 'timeout'), "the other project's codes do not show");
});

t.test('group_by is required and checked; paging parameters do not apply', async (t) => {
  const cases: [string, string[]][] = [
    ['', ['validation_failed /group_by']],
    ['group_by=day', ['validation_failed /group_by']],
    ['group_by=status&group_by=hour', ['validation_failed /group_by']],
    ['group_by=status&limit=10&cursor=x', ['validation_failed /cursor', 'validation_failed /limit']],
    ['group_by=hour&status=lost&since=now', ['validation_failed /since', 'validation_failed /status']],
  ];
  for (const [q, want] of cases) {
    const answer = await call(`${gw.url}/api/deliveries/stats?${q}`, 'GET', A.rest_key);
    t.equal(answer.status, 400, q);
    t.same(errorPaths(answer).sort(), want, q);
  }
});

t.test('auth: REST key only', async (t) => {
  t.equal((await stats({ group_by: 'status' }, null)).status, 401);
  const sdk = await stats({ group_by: 'status' }, A.sdk_key);
  t.equal(sdk.status, 403);
  t.same(errorPaths(sdk), ['wrong_key_type ']);
});

// Stats over whole hours read the projection counts_by_hour (migration 0006) and the
// partial edge hours from the table; these prove the sum equals a count of the rows themselves.
const C = await otherProject(gw);
// 2000 records over six hours at irregular times, some exactly on an hour and some 1 ms before
// one, written in four inserts (four parts, as the recorder's batches make).
const edgeTimes = [0, HOUR - 1, HOUR, 2 * HOUR - 1, 2 * HOUR, 3 * HOUR, 5 * HOUR + HOUR - 1];
const rowsC = Array.from({ length: 2000 }, (_, i) =>
  deliveryRow(C.project_id, i, { at: BASE + (edgeTimes[i % 40] ?? (i * 7_919_993) % (6 * HOUR)) }),
);
for (let i = 0; i < 4; i++) await insertRows(gw.clickhouse, 'message_deliveries', rowsC.slice(i * 500, (i + 1) * 500));

const at = (hours: number, ms = 0): number => BASE + hours * HOUR + ms;
/** [since, until) pairs: whole hours, partial edges, one hour, one boundary, open ends, none. */
const ranges: [string, Pick<DeliveryFilter, 'since' | 'until'>][] = [
  ['no range', {}],
  ['whole hours', { since: at(1), until: at(4) }],
  ['partial edges both sides', { since: at(0, 1_234), until: at(5, 2_345_678) }],
  ['since on an hour, until inside one', { since: at(2), until: at(4, 1) }],
  ['since inside an hour, until on one', { since: at(1, -1), until: at(3) }],
  ['since only, inside an hour', { since: at(2, 17) }],
  ['until only, inside an hour', { until: at(3, 999) }],
  ['since only, on an hour', { since: at(3) }],
  ['inside one hour', { since: at(1, 5), until: at(1, 600_000) }],
  ['across one boundary, no whole hour', { since: at(2, -1), until: at(2, 1) }],
  ['one whole hour and both edges, edges 1 ms', { since: at(1, -1), until: at(2, 1) }],
  ['exactly one hour', { since: at(5), until: at(6) }],
  ['empty', { since: at(2), until: at(2) }],
  ['beyond the data, far past and future', { since: Date.UTC(1950, 0, 1, 0, 30), until: Date.UTC(2200, 0, 1) }],
];
const groupBys: GroupBy[] = ['status', 'channel', 'error_code', 'subscription_type', 'notification_id', 'hour'];

t.test('every group_by over ranges that are and are not on whole hours equals a count of the rows', async (t) => {
  for (const [name, range] of ranges) {
    for (const groupBy of groupBys) {
      t.same(await deliveryStats(gw.clickhouse, C.project_id, range, groupBy), handCount(rowsC, range, groupBy), `${name}, ${groupBy}`);
    }
  }
});

t.test('filters on the projection columns and filters it lacks count the same as the rows', async (t) => {
  const filters: DeliveryFilter[] = [
    { status: 'failed' },
    { channel: 'PUSH', subscription_type: 'IOS_PUSH' },
    { error_code: 'opted_out' },
    { status: 'skipped', error_code: 'no_subscription', channel: 'EMAIL' },
    { external_id: 'u3' },
    { notification_id: 'n2', status: 'sent' },
    { external_id: 'u4', channel: 'SMS' },
  ];
  for (const filter of filters) {
    for (const [name, range] of ranges) {
      for (const groupBy of groupBys) {
        const f = { ...filter, ...range };
        t.same(await deliveryStats(gw.clickhouse, C.project_id, f, groupBy), handCount(rowsC, f, groupBy), `${JSON.stringify(filter)} ${name}, ${groupBy}`);
      }
    }
  }
});

t.test('the API answers the split query with the hand count (since/until as ISO 8601)', async (t) => {
  const since = at(0, 1_234);
  const until = at(5, 2_345_678);
  const answer = await stats({ group_by: 'hour', since: new Date(since).toISOString(), until: new Date(until).toISOString() }, C.rest_key);
  t.equal(answer.status, 200);
  t.same(groups(answer), handCount(rowsC, { since, until }, 'hour'));
  t.equal(groups(answer).length, 6, 'six hours, the first and last partial');
});

/**
 * The `ReadFromMergeTree (...)` steps of the plan of the stats query for `filter` and `groupBy`,
 * tables without their database (each test has its own on a server).
 */
async function reads(filter: DeliveryFilter, groupBy: GroupBy): Promise<string[]> {
  const { query, params } = statsQueryFor(filter, groupBy);
  const result = await gw.clickhouse.query({ query: `EXPLAIN projections = 1 ${query}`, query_params: { ...params, project: C.project_id }, format: 'JSONEachRow' });
  const plan = await result.json<{ explain: string }>();
  return plan.flatMap(({ explain }) => /ReadFromMergeTree \((?:\w+\.)?(.+)\)/.exec(explain)?.[1] ?? []);
}

t.test('whole hours are read from the projection counts_by_hour, the edges from the table', async (t) => {
  t.same(await reads({ since: at(0, 1_234), until: at(5, 2_345_678), status: 'failed' }, 'hour'), ['counts_by_hour', 'message_deliveries']);
  t.same(await reads({}, 'status'), ['counts_by_hour', 'message_deliveries'], 'no range: every hour from the projection');
  t.same(await reads({ external_id: 'u3', since: at(1), until: at(4) }, 'status'), ['message_deliveries'], 'external_id: the table');
  t.same(await reads({ since: at(1), until: at(4) }, 'notification_id'), ['message_deliveries'], 'group_by notification_id: the table');
  t.same(await reads({ since: at(1, 5), until: at(1, 9) }, 'channel'), ['message_deliveries'], 'no whole hour: the table');
});

t.test('hours before 1970 and after 2106 (beyond a DateTime) are counted in their own hour', async (t) => {
  const D = await otherProject(gw);
  const times = [Date.UTC(1969, 11, 31, 22, 59, 59, 999), Date.UTC(1969, 11, 31, 23), Date.UTC(1969, 11, 31, 23, 59, 59, 999), 0, Date.UTC(2150, 5, 1, 12, 30), Date.UTC(2150, 5, 1, 13)];
  const rowsD = times.map((time, i) => deliveryRow(D.project_id, i, { at: time }));
  await insertRows(gw.clickhouse, 'message_deliveries', rowsD);
  const cases: Pick<DeliveryFilter, 'since' | 'until'>[] = [
    {},
    { since: Date.UTC(1969, 11, 31, 23), until: Date.UTC(1970, 0, 1, 1) },
    { since: Date.UTC(1969, 11, 31, 22, 30), until: Date.UTC(1970, 0, 1) },
    { since: Date.UTC(2150, 5, 1, 13) },
    { since: Date.UTC(2000, 0, 1), until: Date.UTC(2150, 5, 1, 13) },
  ];
  for (const range of cases) {
    for (const groupBy of ['hour', 'status'] as const) {
      t.same(await deliveryStats(gw.clickhouse, D.project_id, range, groupBy), handCount(rowsD, range, groupBy), `${JSON.stringify(range)} ${groupBy}`);
    }
  }
});

t.test('parts without the projection (written before migration 0006 materialized it) are read from the table', async (t) => {
  const E = await otherProject(gw);
  const rowsE = Array.from({ length: 300 }, (_, i) => deliveryRow(E.project_id, i, { at: Date.UTC(2150, 0, 1) + i * 60_000 }));
  await insertRows(gw.clickhouse, 'message_deliveries', rowsE.slice(0, 150));
  await gw.clickhouse.command({
    query: "ALTER TABLE message_deliveries CLEAR PROJECTION counts_by_hour IN PARTITION '215001'",
    clickhouse_settings: { mutations_sync: '1' },
  });
  await insertRows(gw.clickhouse, 'message_deliveries', rowsE.slice(150));
  const parts = await gw.clickhouse.query({
    query: "SELECT projections FROM system.parts WHERE table = 'message_deliveries' AND partition = '215001' AND active ORDER BY name",
    format: 'JSONEachRow',
  });
  // Other projections (by_user, migration 0009) are not this test's concern.
  const withCounts = (await parts.json<{ projections: string[] }>()).map((p) => p.projections.includes('counts_by_hour'));
  t.same(withCounts, [false, true], 'one part with, one without');
  const range = { since: Date.UTC(2150, 0, 1, 0, 30), until: Date.UTC(2150, 0, 1, 4, 10) };
  for (const groupBy of groupBys) {
    t.same(await deliveryStats(gw.clickhouse, E.project_id, range, groupBy), handCount(rowsE, range, groupBy), groupBy);
  }
});
