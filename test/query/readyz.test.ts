import t from 'tap';
import { chooseServer } from '../../gateway/server/choice.ts';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';

t.test('/readyz answers 200 once Redis and ClickHouse both answer, naming the HTTP server', async (t) => {
  const gw = await inProcessGateway(t);
  const ready = await call(`${gw.url}/readyz`, 'GET', null);
  t.equal(ready.status, 200);
  t.same(ready.body, { ok: true, server: chooseServer(gw.config.HTTP_SERVER) });
});

t.test('/readyz answers 503 with Retry-After while ClickHouse cannot be reached, Redis being up', async (t) => {
  const d = await deployment(t, { env: { CLICKHOUSE_URL: 'http://127.0.0.1:9' } });
  const gw = await d.start(['gateway']);
  const ready = await call(`${gw.url}/readyz`, 'GET', null);
  t.equal(ready.status, 503);
  t.equal(ready.headers.get('retry-after'), '1');
  const health = await call(`${gw.url}/healthz`, 'GET', null);
  t.equal(health.status, 200, 'the process itself is healthy');
});
