import t, { type Test } from 'tap';
import { readHashes } from '../../engine/state/users/read-user.ts';
import { Redis } from 'ioredis';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { ensureGroup } from '../../engine/infra/runner/consumer-loop.ts';
import { PartitionRunner } from '../../engine/infra/runner/partition-runner.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { writeConsent } from '../../engine/state/users/consent.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { RecorderKeys } from '../../actors/recorder/redis-keys.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';
import { WebhookKeys } from '../../engine/state/webhooks/redis-keys.ts';

/**
 * Redis at maxmemory with noeviction refuses every command that may grow memory. What frees memory
 * must still run (docs/architecture.md#progress-at-the-memory-limit): each script declares whether
 * it runs there, and the lease round, group creation and consent writes go through such scripts.
 */

const OOM = /^OOM command not allowed/;

/** How far past maxmemory the test holds Redis: well over what buffers and lazy frees move between two commands. */
const PAST_LIMIT = 1024 * 1024;

async function fullRedis(t: Test): Promise<{ url: string; raw: Redis }> {
  const server = await PrivateRedis.start({ maxmemory: '64mb' });
  const raw = new Redis(server.url, { maxRetriesPerRequest: 0 });
  t.teardown(async () => {
    raw.disconnect();
    await server.stop();
  });
  // Filling up to the limit leaves Redis a few bytes either side of it, where a command may be
  // refused and the next one taken. Some ballast, then the limit set below what Redis holds:
  // every write that may grow memory is refused, whatever moves between commands.
  for (let i = 0; i < 32; i++) await raw.set(`ballast:${i}`, 'x'.repeat(64 * 1024));
  const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1]);
  await raw.config('SET', 'maxmemory', String(used - PAST_LIMIT));
  await t.rejects(raw.xadd('probe', '*', 'd', '1'), OOM, 'a plain XADD is refused: Redis is full');
  await t.rejects(raw.zadd('probe:z', 1, 'a'), OOM, 'so is a plain ZADD');
  return { url: server.url, raw };
}

t.test('at maxmemory the scripts declared allow-oom run, and one declared refuse is refused whole', async (t) => {
  const { url, raw } = await fullRedis(t);
  const redis = createRedis(loadConfig({ REDIS_URL: url, KEY_PREFIX: 'm:', PARTITIONS: '4' }));
  t.teardown(() => redis.disconnect());
  const topology = new Topology('m:', 4);

  const { live } = await scripts.heartbeat(redis, { keys: { workers: topology.workers() }, args: { worker: 'w1', now: Date.now(), expiresAt: Date.now() + 3000 } });
  t.same(live, ['w1'], 'heartbeat');
  t.same(await scripts.setIfAbsent(redis, { keys: { key: topology.lease(0) }, args: { value: 'w1', ttlMs: 3000 } }), { set: true }, 'a lease is taken');
  t.same(await scripts.renewLeases(redis, { keys: {}, args: { worker: 'w1', leaseMs: 3000 }, leases: [topology.lease(0)] }), [true], 'and renewed');
  await ensureGroup(redis, topology.ingest(0), 'apply');
  await ensureGroup(redis, topology.ingest(0), 'apply');
  t.equal(((await raw.xinfo('GROUPS', topology.ingest(0))) as unknown[]).length, 1, 'a consumer group is created (once)');
  t.same(await scripts.markRound(redis, { keys: { marks: topology.own(RecorderKeys).marks(0) }, args: { kind: 'changes', token: 'r1' } }), { marked: true }, 'a recorder round is marked');
  const id = '0123456789abcdef0123456789abcdef';
  const token = { keys: { index: topology.own(UserKeys).tokenIndex(id), owed: topology.own(UserKeys).tokenDetaches(id) }, args: { id, externalId: 'u1', registeredAt: 1 }, owed: [] };
  t.same(await scripts.claimToken(redis, token), { owed: [] }, 'a registration is claimed in the token index');
  t.same(await scripts.tokenOwner(redis, { keys: { index: token.keys.index }, args: { id } }), { entry: '1c:u1' });
  t.same(await scripts.queueEvents(redis, { keys: { queue: topology.own(WebhookKeys).webhookQueue('w1') }, args: {}, events: [{ body: '{}', key: 'n1' }] }), { appended: 1 }, 'a webhook event is queued');
  await ensureGroup(redis, topology.outcomes(0), 'webhooks');
  t.same(await scripts.settleTapped(redis, { keys: { stream: topology.outcomes(0) }, args: { group: 'webhooks', lastId: '0-1' }, ids: ['0-1'] }), { pending: 0, trimmedTo: '0-0' }, 'the webhooks tap settles');
  const stored = await writeConsent(redis, topology, 'proj', 'u1', 'EMAIL', true, 1234);
  t.same(JSON.parse((await readHashes(raw, topology, 'proj', 'u1')).consent['EMAIL'] ?? 'null'), stored, 'an opt-out is written');
  t.equal(await raw.xlen(topology.changes(topology.partitionOf('proj', 'u1'))), 1, 'with its change for the recorder');

  const jobs = scripts.appendJobs(redis, {
    keys: { dispatch: 'm:dispatch:{p0}', fanned: 'm:nfan:{p0}:n1', counts: 'm:ncount:{p0}:n1' },
    args: { notification: 'n1', project: 'proj', keepSeconds: 60, jobsField: 'jobs', perJob: 8 },
    users: ['u1', 'u2'],
  });
  await t.rejects(jobs, OOM, 'new work (a fan-out chunk) is refused');
  t.equal(await raw.exists('m:dispatch:{p0}', 'm:nfan:{p0}:n1', 'm:ncount:{p0}:n1'), 0, 'and nothing of it was written');
});

t.test('at maxmemory a partition runner still heartbeats and takes its leases', async (t) => {
  const { url, raw } = await fullRedis(t);
  const redis = createRedis(loadConfig({ REDIS_URL: url, KEY_PREFIX: 'm:' }));
  t.teardown(() => redis.disconnect());
  const owned = new Set<number>();
  const runner = new PartitionRunner({
    redis,
    partitions: 4,
    leaseKey: (p) => `m:lease:{p${p}}`,
    workersKey: 'm:workers',
    workerId: 'w1',
    leaseMs: 600,
    log: createLogger('error'),
    work: (p) => ({ start: () => owned.add(p), stop: async () => {} }),
  });
  runner.start();
  t.teardown(() => runner.close());
  await eventually('every partition owned', async () => (owned.size === 4 ? true : undefined));
  t.same(await raw.zrange('m:workers', 0, -1), ['w1'], 'the worker set holds the runner');
  t.equal(await raw.get('m:lease:{p3}'), 'w1', 'the leases name it');
});
