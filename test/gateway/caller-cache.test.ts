import t from 'tap';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { CallerCache } from '../../gateway/server/auth.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { testPrefix } from '../helpers/redis.ts';

// While Redis is down, a key verified before keeps its last answer. Before, an expired entry was
// looked up again on every request, each waiting out the command timeout.
t.test('during an outage a key seen before answers from the cache without a lookup per request', async (t) => {
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  const config = loadConfig({ REDIS_URL: server.url, KEY_PREFIX: testPrefix() });
  const redis = createRedis(config, { commandTimeout: 200 });
  t.teardown(() => redis.disconnect());
  const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
  const project = await keystore.createProject('p', false);
  const cache = new CallerCache(keystore, 50);
  t.equal((await cache.load(project.sdk_key))?.project, project.project_id, 'looked up while Redis runs');

  await server.stop();
  await new Promise((r) => setTimeout(r, 60));
  t.equal(cache.peek(project.sdk_key), undefined, 'the entry expired');
  t.equal((await cache.load(project.sdk_key))?.project, project.project_id, 'the last answer stands when the lookup fails');
  t.equal(cache.peek(project.sdk_key)?.project, project.project_id, 'and is cached again: the next request makes no lookup');
});
