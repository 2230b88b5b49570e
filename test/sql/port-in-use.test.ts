import { createServer } from 'node:net';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';

/**
 * Two engines on one host with the default SQL_PORT: the second cannot take the port, and runs on
 * without its SQL listener rather than stop ingest and sends (docs/sql.md).
 */
t.test('a SQL_PORT in use leaves the engine running without the listener, said in the log', async (t) => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = (holder.address() as { port: number }).port;
  const d = await deployment(t);
  const engine = await d.start(['gateway', 'sql'], { ...d.env, SQL_PORT: String(port) });
  t.equal((await call(`${engine.url}/healthz`, 'GET', null)).status, 200, 'the gateway serves');
  t.ok(
    engine.logs.some((line) => line['level'] === 'error' && String(line['msg']).startsWith('sql listener not started') && line['port'] === port),
    'the log says why there is no SQL listener',
  );
  t.equal(await engine.stop(), 0, 'and it stops cleanly');
});
