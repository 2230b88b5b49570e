import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';

t.test('the query routes answer 503 with Retry-After while ClickHouse cannot be reached', async (t) => {
  const d = await deployment(t, { env: { CLICKHOUSE_URL: 'http://127.0.0.1:9' } });
  const gw = await d.start(['gateway']);
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const hook = await new WebhookRegistry(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)).create(d.project.project_id, { url: 'https://example.com/h', events: ['delivery.sent'] });
  for (const path of ['/api/deliveries', '/api/deliveries/stats?group_by=hour', '/api/events?limit=5', `/api/webhooks/${hook.id}/attempts`]) {
    const answer = await call(`${gw.url}${path}`, 'GET', d.project.rest_key);
    t.equal(answer.status, 503, path);
    t.equal(answer.headers.get('retry-after'), '1', path);
    t.same(answer.body, { errors: [{ code: 'unavailable', message: 'The service cannot meet this call now.' }] }, path);
  }
  const bad = await call(`${gw.url}/api/deliveries?limit=0`, 'GET', d.project.rest_key);
  t.equal(bad.status, 400, 'a bad request is still a 400: it never reaches ClickHouse');
  const unknown = await call(`${gw.url}/api/webhooks/no-such-endpoint/attempts`, 'GET', d.project.rest_key);
  t.equal(unknown.status, 404, 'an unknown endpoint is a 404: it never reaches ClickHouse');
});
