import t from 'tap';
import { EndpointCopy } from '../../actors/webhooks/endpoints.ts';
import { commandStats } from '../../bench/commandstats.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

/**
 * A process's copy of the webhook endpoints (actors/webhooks/endpoints.ts), on a Redis of the
 * test's own so its reads can be counted: the taps of a process with no endpoint share their look
 * for a first one; a refresh without an age asks every time.
 */

t.test('refreshes that accept an age share one read; a plain refresh always reads', async (t) => {
  const server = await PrivateRedis.start();
  const redis = createRedis(loadConfig({ REDIS_URL: server.url, KEY_PREFIX: 'w:' }));
  t.teardown(async () => {
    redis.disconnect();
    await server.stop();
  });
  const registry = new WebhookRegistry(redis, new Topology('w:', 4));
  const copy = new EndpointCopy(registry);
  const gets = async (): Promise<number> => (await commandStats(redis)).get('get')?.calls ?? 0;

  let before = await gets();
  await Promise.all(Array.from({ length: 64 }, () => copy.refresh(60_000)));
  t.equal((await gets()) - before, 1, '64 taps looking at once: one read of the version');
  before = await gets();
  await copy.refresh(60_000);
  t.equal((await gets()) - before, 0, 'within the age: none');
  t.equal(copy.empty, true, 'no endpoint yet');

  await registry.create('p1', { url: 'https://example.com/hook', events: ['delivery.sent'] });
  await copy.refresh(60_000);
  t.equal(copy.empty, true, 'an endpoint created within the age is not seen yet');
  await copy.refresh();
  t.equal(copy.has('p1'), true, 'a plain refresh reads, and loads the new endpoint');
  await new Promise((r) => setTimeout(r, 60));
  await registry.create('p2', { url: 'https://example.com/hook', events: ['delivery.sent'] });
  await copy.refresh(50);
  t.equal(copy.has('p2'), true, 'past the age, a refresh that accepts one reads too');
});
