import t from 'tap';
import { insertRows } from '../../engine/clickhouse/insert.ts';
import type { DeliveryGroup } from '../../schemas/queries.ts';
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
