import t from 'tap';
import { writeUserRecord } from '../helpers/user-record.ts';
import { applyRole } from '../../actors/partition/role.ts';
import { recorderRole } from '../../actors/recorder/role.ts';
import { rows } from '../clickhouse/embedded.ts';
import { call, eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { outcome } from './outcomes.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';
import { decodeUserRecord } from '../../engine/state/users/user-record.ts';
import { toRawEntries } from '../../engine/infra/runner/types.ts';
import { recordsOf } from '../../actors/recorder/rows.ts';

t.test('the recorder fills users, events, receipts and message_deliveries from the streams', async (t) => {
  const gw = await inProcessGateway(t);
  await gw.run(applyRole);
  await gw.run(recorderRole);
  const key = gw.project.sdk_key;
  const project = gw.project.project_id;
  const sdk = (path: string, body: unknown, method = 'POST') => call(`${gw.url}/api/sdk${path}`, method, key, body);

  t.equal((await sdk('/users', { external_id: 'alice', tags: { plan: 'gold', level: 7 } })).status, 202);
  t.equal((await sdk('/users/alice/subscriptions', { type: 'EMAIL', token: 'alice@example.com' })).status, 202);
  t.equal((await sdk('/events', { external_id: 'alice', name: 'purchase', properties: { sku: 'a1', qty: 2 }, idempotency_key: 'k1' })).status, 202);
  t.equal((await sdk('/events', { external_id: 'alice', name: 'purchase', properties: { sku: 'a1', qty: 2 }, idempotency_key: 'k1' })).status, 202);
  t.equal((await sdk('/receipts', { svc_message_id: 'n1', external_id: 'alice', kind: 'opened' })).status, 202);
  t.equal((await sdk('/opt-out', { external_id: 'alice', subscription_type: 'SMS' })).status, 200);
  for (let n = 0; n < 25; n++) {
    const o = outcome(project, n);
    await gw.redis.xadd(gw.topology.outcomes(gw.topology.partitionOf(project, o.external_id)), '*', 'd', JSON.stringify(o));
  }

  const user = await eventually('alice in the users mirror with her consent', async () => {
    const [row] = await rows<Record<string, unknown>>(
      gw.clickhouse,
      'SELECT external_id, tags, tag_numbers, subscription_types, opted_out FROM users FINAL WHERE project = {p:String}',
      { p: project },
    );
    return row && (row['opted_out'] as string[]).length > 0 && (row['subscription_types'] as string[]).length > 0 ? row : undefined;
  });
  t.same(user, {
    external_id: 'alice',
    tags: { level: '7', plan: 'gold' },
    tag_numbers: { level: 7 },
    subscription_types: ['EMAIL'],
    opted_out: ['SMS'],
  });
  const events = await eventually('the event', async () => {
    const found = await rows<Record<string, unknown>>(gw.clickhouse, 'SELECT external_id, name, properties, idempotency_key FROM events WHERE project = {p:String}', { p: project });
    return found.length > 0 ? found : undefined;
  });
  t.same(events, [{ external_id: 'alice', name: 'purchase', properties: '{"qty":2,"sku":"a1"}', idempotency_key: 'k1' }], 'a keyed event retried is one row');
  const receipts = await eventually('the receipt', async () => {
    const found = await rows(gw.clickhouse, 'SELECT svc_message_id, external_id, receipt FROM receipts WHERE project = {p:String}', { p: project });
    return found.length > 0 ? found : undefined;
  });
  t.same(receipts, [{ svc_message_id: 'n1', external_id: 'alice', receipt: 'opened' }]);
  const deliveries = await eventually('25 deliveries', async () => {
    const found = await rows<{ id: string }>(gw.clickhouse, 'SELECT id FROM message_deliveries WHERE project = {p:String} ORDER BY id', { p: project });
    return found.length === 25 ? found : undefined;
  });
  t.equal(new Set(deliveries.map((d) => d.id)).size, 25, 'each outcome once');

  const acked = await eventually('every entry acknowledged', async () => {
    let pending = 0;
    for (let p = 0; p < gw.topology.partitions; p++) {
      for (const stream of [gw.topology.changes(p), gw.topology.outcomes(p)]) {
        if ((await gw.redis.exists(stream)) === 0) continue;
        const [count] = (await gw.redis.xpending(stream, 'recorder')) as [number];
        pending += count;
      }
    }
    return pending === 0 ? true : undefined;
  });
  t.ok(acked);
});

t.test("a user's row holds the state its change carries, without reading the user back", async (t) => {
  const gw = await inProcessGateway(t);
  await gw.run(applyRole);
  const project = gw.project.project_id;
  const changes = gw.topology.changes(gw.topology.partitionOf(project, 'bob'));
  const posted = await call(`${gw.url}/api/sdk/users`, 'POST', gw.project.sdk_key, { external_id: 'bob', tags: { plan: 'silver', tier: '2' } });
  t.equal(posted.status, 202);
  const record = await eventually('the user change', async () => {
    for (const entry of toRawEntries(await gw.redis.xrangeBuffer(changes, '-', '+'))) {
      const change = JSON.parse(entry.fields[1]?.toString() ?? '{}') as { kind: string; users?: { external_id: string }[] };
      const at = change.kind === 'users' ? (change.users ?? []).findIndex((u) => u.external_id === 'bob') : -1;
      if (at >= 0) return recordsOf(entry)[at];
    }
    return undefined;
  });
  const stored = decodeUserRecord(record);
  t.same(stored.tags, { plan: 'ssilver', tier: 's2' }, 'the change holds the record as stored');
  t.same(stored.consent, {}, 'with no consent');
  // Redis moves on before the recorder runs: the row must still be the state of the change.
  await writeUserRecord(gw.redis, gw.topology.own(UserKeys).user(project, 'bob'), { created_at: 1, updated_at: 1, tags: { plan: 'later' } });
  await gw.run(recorderRole);
  const row = await eventually('bob in the users mirror', async () => {
    const [found] = await rows<Record<string, unknown>>(gw.clickhouse, 'SELECT tags FROM users FINAL WHERE project = {p:String}', { p: project });
    return found;
  });
  t.same(row, { tags: { plan: 'silver', tier: '2' } });
});
