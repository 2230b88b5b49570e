import t from 'tap';
import { Redis } from 'ioredis';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { startEngine, testEnv } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { testPrefix } from '../helpers/redis.ts';

t.test('while Redis is down, buffered writes are accepted from the spill journal and land in order when it returns', async (t) => {
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  const env = testEnv(testPrefix(), { REDIS_URL: server.url, KEY_CACHE_MS: '300', REDIS_TIMEOUT_MS: '300' });
  const config = loadConfig(env);
  const admin = createRedis(config);
  const project = await new Keystore(admin, new Topology(config.KEY_PREFIX, config.PARTITIONS)).createProject('outage', false);
  admin.disconnect();
  const gw = await startEngine(['gateway'], env);
  t.teardown(() => gw.kill());
  const tags = (seq: number) => call(`${gw.url}/api/sdk/users/u1/tags`, 'PUT', project.sdk_key, { seq });

  for (let seq = 0; seq < 5; seq++) t.equal((await tags(seq)).status, 202);
  await server.stop();
  await new Promise((r) => setTimeout(r, 500)); // past KEY_CACHE_MS: the key must be served from the last answer
  for (let seq = 5; seq < 15; seq++) t.equal((await tags(seq)).status, 202, `write ${seq} accepted during the outage`);
  const optOut = await call(`${gw.url}/api/sdk/opt-out`, 'POST', project.sdk_key, { external_id: 'u1', subscription_type: 'EMAIL' });
  t.equal(optOut.status, 503, 'opt-out cannot be confirmed without Redis');
  t.equal(optOut.headers.get('retry-after'), '1');

  await server.restart();
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const stream = topology.ingest(topology.partitionOf(project.project_id, 'u1'));
  const reader = new Redis(server.url);
  t.teardown(() => reader.disconnect());
  const replayed = await eventually('journal replayed', async () => {
    const entries = (await reader.xrange(stream, '-', '+')).map(([, f]) => JSON.parse(f[1] ?? '{}') as IngestEntry);
    return entries.length >= 10 ? entries : undefined;
  });
  // The restarted Redis keeps nothing on disk, so only the journaled writes are in it.
  t.same(
    replayed.map((e) => (e.op === 'tags' ? e.tags['seq'] : null)),
    Array.from({ length: 10 }, (_, i) => `n${i + 5}`),
    'every write taken during the outage, once, in order',
  );
});
