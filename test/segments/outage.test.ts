import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

t.test('while Redis is down every segment route answers 503 with Retry-After, and works again after', async (t) => {
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  const gw = await inProcessGateway(t, { REDIS_URL: server.url, REDIS_TIMEOUT_MS: '300' });
  const key = gw.project.rest_key;
  const segments = `${gw.url}/api/segments`;
  const filters = [{ field: 'subscription', type: 'EMAIL' }];
  t.equal((await call(segments, 'POST', key, { name: 'mail', filters })).status, 201, 'the key is known to the gateway before the outage');

  await server.stop();
  const routes: [string, string, unknown][] = [
    [segments, 'POST', { name: 'other', filters }],
    [segments, 'GET', undefined],
    [`${segments}/mail`, 'GET', undefined],
    [`${segments}/All`, 'GET', undefined],
    [`${segments}/mail`, 'DELETE', undefined],
    [`${segments}/mail/count`, 'GET', undefined],
  ];
  for (const [target, method, body] of routes) {
    const answer = await call(target, method, key, body);
    t.same([answer.status, answer.headers.get('retry-after'), (answer.body as { errors: { code: string }[] }).errors[0]?.code], [503, '1', 'unavailable'], `${method} ${target.slice(gw.url.length)}`);
  }

  // The private server keeps nothing on disk, so the project is gone after the restart: whatever
  // the key now gets (its cached caller, or 401), it is an answer from Redis, not a 503.
  await server.restart();
  const back = await eventually('an answer from Redis', async () => {
    const answer = await call(`${segments}/mail`, 'GET', key);
    return answer.status === 503 ? undefined : answer.status;
  });
  t.ok(back === 404 || back === 401, `answers again once Redis is back (${back})`);
});
