import t from 'tap';
import { writeUserRecord } from '../helpers/user-record.ts';
import type { NotificationCreated } from '../../schemas/notifications.ts';
import { call } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';
import { subscriptionId } from '../../engine/state/users/subscription-ids.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { NotificationKeys } from '../../engine/state/notifications/redis-keys.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

t.test('on a Redis Cluster a notification is written record first, then its log entry, and cancels; subscription ids resolve', async (t) => {
  const cluster = await PrivateCluster.start();
  t.teardown(() => cluster.stop());
  const gw = await inProcessGateway(t, { REDIS_URL: cluster.url });
  const url = `${gw.url}/api/notifications`;
  const key = gw.project.rest_key;
  const contents = { en: 'Hello' };

  const queued = await call(url, 'POST', key, { include_external_user_ids: ['u1', 'u2'], contents, idempotency_key: 'k' });
  t.equal(queued.status, 201);
  const id = (queued.body as NotificationCreated).id;
  t.same(queued.body, { id, svc_message_id: id, recipients: 0, status: 'queued', errors: { invalid_external_user_ids: ['u1', 'u2'] }, external_id: null, warnings: [] });
  const log = await gw.redis.xrange(gw.topology.notifications(), '-', '+');
  t.same(log.map(([, f]) => f[1]), [id]);
  t.same((await call(url, 'POST', key, { include_external_user_ids: ['u1', 'u2'], contents, idempotency_key: 'k' })).body, queued.body, 'a repeat');
  t.equal(await gw.redis.xlen(gw.topology.notifications()), 1);

  const later = new Date(Date.now() + 60_000).toISOString();
  const scheduled = await call(url, 'POST', key, { include_external_user_ids: ['u1'], contents, send_after: later });
  const sid = (scheduled.body as NotificationCreated).id;
  t.equal(Number(await gw.redis.zscore(gw.topology.own(NotificationKeys).scheduled(), sid)), Date.parse(later));
  const canceled = await call(`${url}/${sid}`, 'DELETE', key);
  t.match([canceled.status, canceled.body], [200, { id: sid, status: 'canceled', canceled: true, send_after: later }]);
  t.equal(await gw.redis.zscore(gw.topology.own(NotificationKeys).scheduled(), sid), null);
  t.match((await call(`${url}/${id}`, 'GET', key)).body, { id, status: 'queued', recipients: 0 });

  // By subscription id: the token index and the holder's record are in two slots.
  const project = gw.project.project_id;
  const sub = { type: 'IOS_PUSH' as const, token: 'ab'.repeat(32) };
  await new TokenIndex(gw.redis, gw.topology).claim(project, sub, 'u3', 1, false);
  await writeUserRecord(gw.redis, gw.topology.own(UserKeys).user(project, 'u3'), { created_at: 1, updated_at: 1, subs: [{ ...sub, state: 'live', created_at: 1, updated_at: 1, registered_at: 1 }] });
  const byId = await call(url, 'POST', key, { include_subscription_ids: [subscriptionId(project, sub.type, sub.token), 'unknown'], contents });
  t.match([byId.status, byId.body], [201, { recipients: 1, errors: { invalid_player_ids: ['unknown'] } }], 'by subscription id');
});
