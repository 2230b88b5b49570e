import t from 'tap';
import { OutboxSettler } from '../../actors/partition/outbox-settler.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createNotification } from '../../engine/state/notifications/create.ts';
import { readView } from '../../engine/state/notifications/view.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { subscriptionId } from '../../engine/state/users/subscription-ids.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';
import { writeUserRecord } from '../helpers/user-record.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

/**
 * The token index as the outbox settler writes it (replayed entries included), found by id, and the
 * notification view when ClickHouse cannot answer (docs/api.md#reading-listing-and-cancelling).
 */

const prefix = testPrefix();
const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
t.teardown(async () => {
  redis.disconnect();
  await cleanupPrefix(prefix);
});
const topology = new Topology(prefix, 4);

t.test('the settler indexes each registration, found by its id, and a replayed entry changes nothing', async (t) => {
  const registration = { project: 'p1', external_id: 'u1', type: 'IOS_PUSH', token: 'ab:cd', registered_at: 1000 };
  const partition = topology.partitionOf('p1', 'u1');
  const settler = new OutboxSettler(redis, topology);
  const ids = new TokenIndex(redis, topology);
  // The apply wrote the subscription into u1's record before its registration reached the outbox.
  await writeUserRecord(redis, topology.own(UserKeys).user('p1', 'u1'), { created_at: 1000, updated_at: 1000, subs: [{ type: 'IOS_PUSH', token: 'ab:cd', state: 'live', created_at: 1000, updated_at: 1000, registered_at: 1000 }] });
  const id = subscriptionId('p1', 'IOS_PUSH', 'ab:cd');
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.not(subscriptionId('p2', 'IOS_PUSH', 'ab:cd'), id, 'another project, another id');
  t.not(subscriptionId('p1', 'ANDROID_PUSH', 'ab:cd'), id, 'another type, another id');

  for (let copy = 0; copy < 2; copy++) {
    await redis.xadd(topology.outbox(partition), '*', 'd', JSON.stringify(registration));
    await settler.settle(partition);
    t.same(await ids.resolve('p1', [id, 'unknown']), [{ type: 'IOS_PUSH', token: 'ab:cd' }, null], `after settle ${copy + 1}`);
  }
  t.equal(await redis.hget(topology.own(UserKeys).tokenIndex(id.replaceAll('-', '')), 'n'), '1', 'one entry');
  t.equal(await ids.owner('p1', { type: 'IOS_PUSH', token: 'ab:cd' }), 'u1', 'the claim is settled too');
});

t.test('without ClickHouse the view answers from Redis, without platform_delivery_stats; a bug still throws', async (t) => {
  const down = new Error('ClickHouse is down');
  const deps = { redis, topology, clickhouse: { get: () => Promise.reject(down) }, clickhouseUnavailable: (err: unknown) => err === down };
  const created = await createNotification(deps, 'p1', { include_external_user_ids: ['u9'], contents: { en: 'x' } });
  const view = await readView(deps, 'p1', created.id);
  t.match(view, { id: created.id, recipients: 0, counts: { sent: 0, delivered: 0 }, received: 0, converted: 0 });
  t.notOk(view !== null && 'platform_delivery_stats' in view, 'platform_delivery_stats is left out');
  const bug = new Error('not an outage');
  await t.rejects(readView({ ...deps, clickhouse: { get: () => Promise.reject(bug) } }, 'p1', created.id), bug, 'any other error still propagates');
});
