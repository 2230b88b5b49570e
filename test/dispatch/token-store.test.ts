import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { RedisTokenStore } from '../../actors/dispatch/token-store.ts';
import { ApnsTokenCache } from '../../actors/dispatch/providers/apns-token.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';

/** Two dispatch processes (two token caches) sign one APNs provider token between them. */

const privateKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const key = { team_id: 'TEAM', key_id: 'KEY1', private_key: privateKey };

t.test('caches of two processes share one token through Redis, and replace it once when APNs says it expired', async (t) => {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  let now = 1_000_000_000;
  const clock = (): number => now;
  const store = new RedisTokenStore(redis, new Topology(prefix, 8));
  const [a, b] = [new ApnsTokenCache(clock), new ApnsTokenCache(clock)];
  a.share(store);
  b.share(store);
  const first = await a.token(key);
  now += 1000;
  t.equal(await b.token(key), first, 'the second process takes the first one’s token instead of signing');
  now += 25 * 60_000;
  t.ok(b.expired(key, first), 'APNs said it expired and it is old enough: a new one will be signed');
  const second = await b.token(key);
  t.not(second, first);
  t.ok(a.expired(key, first), 'the other process learns of the expiry too');
  t.equal(await a.token(key), second, 'and takes the replacement rather than signing a third');
});
