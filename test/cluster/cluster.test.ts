import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { startEngine, testEnv } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';
import { testPrefix } from '../helpers/redis.ts';

t.test('on a Redis Cluster the gateway, two apply workers and the recorder behave as on one Redis (docs/architecture.md#redis-cluster-ready)', async (t) => {
  const cluster = await PrivateCluster.start();
  t.teardown(() => cluster.stop());
  const env = testEnv(testPrefix(), { REDIS_URL: cluster.url });
  const config = loadConfig(env);
  const admin = createRedis(config);
  t.teardown(() => admin.disconnect());
  const project = await new Keystore(admin, new Topology(config.KEY_PREFIX, config.PARTITIONS)).createProject('cluster', false);
  const gw = await startEngine(['gateway', 'apply', 'recorder'], env);
  t.teardown(() => gw.kill());
  const worker = await startEngine(['apply'], env);
  t.teardown(() => worker.kill());
  const sdk = project.sdk_key;

  const users = Array.from({ length: 12 }, (_, i) => `c${i}`);
  for (const user of users) {
    t.equal((await call(`${gw.url}/api/sdk/users`, 'POST', sdk, { external_id: user, tags: { n: user } })).status, 202);
    t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', sdk, { external_id: user, name: 'e', idempotency_key: `k-${user}` })).status, 202);
    t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', sdk, { external_id: user, name: 'e', idempotency_key: `k-${user}` })).status, 202);
  }
  // One email moves across users (and so across partitions and slots); the last registrant keeps it.
  for (const user of ['c0', 'c5', 'c9']) {
    t.equal((await call(`${gw.url}/api/sdk/users/${user}/subscriptions`, 'POST', sdk, { type: 'EMAIL', token: 'shared@example.com' })).status, 202);
  }
  const out = await call(`${gw.url}/api/sdk/opt-out`, 'POST', sdk, { external_id: 'c3', subscription_type: 'SMS' });
  t.equal(out.status, 200);

  const subsOf = async (user: string) => {
    const res = await call(`${gw.url}/api/users/${user}`, 'GET', project.rest_key);
    return res.status === 200 ? (res.body as { tags: Record<string, unknown>; subscriptions: unknown[] }) : undefined;
  };
  await eventually('the subscription settled on c9 only', async () => {
    const [a, b, c] = await Promise.all(['c0', 'c5', 'c9'].map(subsOf));
    return a?.subscriptions.length === 0 && b?.subscriptions.length === 0 && c?.subscriptions.length === 1 ? true : undefined;
  });
  // Partitions may still be moving to the second worker: wait for each user rather than read once.
  for (const user of users) {
    const state = await eventually(`${user} applied`, async () => ((await subsOf(user))?.tags['n'] === user ? true : undefined));
    t.ok(state, `${user} applied`);
  }
  t.match((await call(`${gw.url}/api/users/c3`, 'GET', project.rest_key)).body, { consent: { SMS: { opted_out: true } } });

  const lag = await eventually('ingest lag 0', async () => {
    const metrics = String((await call(`${gw.url}/metrics`, 'GET', null)).body);
    return /svc_ingest_lag_entries 0\b/.test(metrics) ? metrics : undefined;
  });
  t.match(lag, /svc_ingest_lag_entries 0/);
  // The recorder moved the changes into ClickHouse (and trimmed the streams): each keyed event once.
  const recorded = await eventually('every event recorded', async () => {
    const res = await call(`${gw.url}/api/events?name=e&limit=100`, 'GET', project.rest_key);
    const list = (res.body as { events: { external_id: string }[] }).events;
    return list.length >= users.length ? list : undefined;
  });
  t.same(recorded.map((e) => e.external_id).sort(), [...users].sort(), 'each keyed event recorded once');

  // Delivery outcomes of users on several partitions (and slots), as the dispatch actors append them.
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  for (const [n, user] of users.entries()) {
    const outcome = { id: `d${n}`, project: project.project_id, notification_id: 'n1', external_id: user, channel: 'PUSH', subscription_type: 'IOS_PUSH', token_tail: null, attempt: 1, status: 'sent', error_code: null, hint: null, provider_message_id: null, latency_ms: 10, retrying: false, at: Date.parse('2026-11-22T10:00:00Z') + n };
    await admin.xadd(topology.outcomes(topology.partitionOf(project.project_id, user)), '*', 'd', JSON.stringify(outcome));
  }
  const deliveries = await eventually('every outcome recorded', async () => {
    const res = await call(`${gw.url}/api/deliveries?notification_id=n1`, 'GET', project.rest_key);
    const list = (res.body as { deliveries: { id: string }[] }).deliveries;
    return list.length >= users.length ? list : undefined;
  });
  t.same(deliveries.map((d) => d.id).sort(), users.map((_, n) => `d${n}`).sort(), 'each outcome recorded once');
  t.notOk(
    [...gw.logs, ...worker.logs].some((l) => l['level'] === 'warn' || l['level'] === 'error'),
    'no warning or error was logged',
  );
});
