import t, { type Test } from 'tap';
import { RecordBatch } from '../../engine/state/notifications/attempts.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Notifications, settlementOf } from '../../engine/state/notifications/lifecycle.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { DISPATCH_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';
import { TcpSwitch } from '../helpers/tcp-switch.ts';

/**
 * A record Redis cannot take while its connection is down is tried again until it can, or until
 * the consumer stops: a job whose send went out must not be claimed and sent again for a blip.
 */

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A dispatch job read by worker w1 in partition 1, and a client that reaches Redis through a switch. */
async function setup(t: Test) {
  const prefix = testPrefix();
  const direct = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  const target = new URL(REDIS_URL);
  const cable = await TcpSwitch.start({ host: target.hostname, port: Number(target.port || 6379) });
  // Commands fail at once while the connection is down, as they do on a Cluster node that went away.
  const switched = createRedis(loadConfig({ REDIS_URL: `redis://127.0.0.1:${cable.port}`, KEY_PREFIX: prefix }), { offlineQueue: false });
  t.teardown(async () => {
    switched.disconnect();
    await cable.close();
    direct.disconnect();
    await cleanupPrefix(prefix);
  });
  const topology = new Topology(prefix, 8);
  const notifications = new Notifications(direct, topology);
  const p = 1;
  const keys = { dispatch: topology.dispatch(p), outcomes: topology.outcomes(p) };
  await direct.xgroup('CREATE', keys.dispatch, DISPATCH_GROUP, '0', 'MKSTREAM');
  const entryId = (await direct.xadd(keys.dispatch, '*', 'd', '{}')) ?? '';
  await direct.xreadgroup('GROUP', DISPATCH_GROUP, 'w1', 'COUNT', 10, 'STREAMS', keys.dispatch, '>');
  const outcomes = [{ status: 'sent' as const, retrying: false }];
  const job = { entryId, ...settlementOf(outcomes, 1), retries: [], outcomes: outcomes.map((o) => JSON.stringify(o)), retire: [] };
  if (switched.status !== 'ready') await new Promise((resolve) => switched.once('ready', resolve));
  return { direct, cable, records: new RecordBatch(switched, topology), p, keys, job, notifications };
}

t.test('a record Redis could not take is recorded once its connection is back', async (t) => {
  const { direct, cable, records, p, keys, job, notifications } = await setup(t);
  cable.switchOff();
  const stop = new AbortController();
  let settled = false;
  const recorded = records.record(p, 'n1', job, stop.signal).finally(() => void (settled = true));
  await sleep(700);
  t.notOk(settled, 'still trying while Redis cannot be reached');
  t.equal(await direct.xlen(keys.outcomes), 0, 'nothing recorded yet');
  cable.switchOn();
  await recorded;
  t.equal(await direct.xlen(keys.outcomes), 1, 'the outcome recorded once');
  const counts = await notifications.counts('n1');
  t.same([counts.done, counts.sent, counts.failed], [1, 1, 0], 'the job counted once');
  t.equal(Number(((await direct.xpending(keys.dispatch, DISPATCH_GROUP)) as [number])[0]), 0, 'the job acknowledged');
});

t.test('a consumer that stops gives the record up: the job stays pending for the next owner', async (t) => {
  const { direct, cable, records, p, keys, job } = await setup(t);
  cable.switchOff();
  const stop = new AbortController();
  const recorded = records.record(p, 'n1', job, stop.signal);
  await sleep(300);
  stop.abort();
  await t.rejects(recorded, 'the record rejects once stopped');
  cable.switchOn();
  t.equal(await direct.xlen(keys.outcomes), 0, 'nothing recorded');
  t.equal(Number(((await direct.xpending(keys.dispatch, DISPATCH_GROUP)) as [number])[0]), 1, 'the job still pending');
});
