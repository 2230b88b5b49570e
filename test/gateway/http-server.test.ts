import t from 'tap';
import { ConfigError } from '../../engine/infra/process/config.ts';
import { chooseServer, uwsProblem } from '../../gateway/server/choice.ts';
import { deployment, runEngine } from '../helpers/engine.ts';

/** Which server HTTP_SERVER picks (docs/configuration.md#environment-variables), and where the running one shows. */

const loads = (): null => null;
const missing = (): string => 'uWebSockets.js has no native addon for Node 99 on linux-x64';

t.test('auto takes uWS when its addon loads, else node; node is node; a forced uws that cannot load says why', async (t) => {
  const heard: string[] = [];
  t.equal(chooseServer('auto', undefined, loads), 'uws');
  t.equal(chooseServer('auto', (why) => heard.push(why), missing), 'node');
  t.equal(chooseServer('uws', undefined, loads), 'uws');
  t.equal(chooseServer('node', undefined, loads), 'node');
  t.equal(chooseServer('node', undefined, missing), 'node');
  t.same(heard, [missing()], 'auto says why it falls back');
  t.throws(() => chooseServer('uws', undefined, missing), new ConfigError('HTTP_SERVER=uws: uWebSockets.js has no native addon for Node 99 on linux-x64; use HTTP_SERVER=node (or auto), or Node 20'));
});

t.test('the addon loads on Node 20 and on no later line of this uWS build', async (t) => {
  const major = Number(process.versions.node.split('.')[0]);
  if (major === 20) t.equal(uwsProblem(), null, 'Node 20: uWS serves');
  else t.match(uwsProblem(), new RegExp(`^uWebSockets.js has no native addon for Node ${major} on ${process.platform}-${process.arch}`), `Node ${major}: why not`);
});

t.test('a forced uws that cannot load stops the start: exit 2, one line saying why and what to do', async (t) => {
  const d = await deployment(t, { env: { CLICKHOUSE_URL: 'http://127.0.0.1:9' } });
  // The package's own switch to its JavaScript stand-in makes the addon unusable on any Node.
  const run = await runEngine(['start', '--roles', 'gateway', '--port', '0'], { ...d.env, HTTP_SERVER: 'uws', UWS_USE_FALLBACK: '1' });
  t.equal(run.code, 2);
  t.equal(run.stderr, 'engine: HTTP_SERVER=uws: UWS_USE_FALLBACK is set, which makes uWebSockets.js use its JavaScript stand-in; use HTTP_SERVER=node (or auto), or Node 20\n');
  t.equal(run.stdout, '');
});

// test/query/readyz.test.ts checks that /readyz names it too.
t.test('the server that runs is logged and exported as a metric; auto without the addon is node, silently', async (t) => {
  const d = await deployment(t, { env: { CLICKHOUSE_URL: 'http://127.0.0.1:9' } });
  const native = uwsProblem() === null ? 'uws' : 'node';
  for (const [env, expected] of [
    [{ HTTP_SERVER: 'auto' }, native],
    [{ HTTP_SERVER: 'node' }, 'node'],
    [{ HTTP_SERVER: 'auto', UWS_USE_FALLBACK: '1' }, 'node'],
  ] as const) {
    const gw = await d.start(['gateway'], env);
    const what = JSON.stringify(env);
    t.match(
      gw.logs.find((l) => l['msg'] === 'listening'),
      { server: expected },
      `${what}: the listening line names ${expected}`,
    );
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    t.match(metrics, `svc_http_server_info{server="${expected}"} 1`, `${what}: the metric`);
    const why = gw.logs.find((l) => l['msg'] === 'uWebSockets.js cannot serve here; node:http serves');
    if (env.HTTP_SERVER === 'auto' && expected === 'node') t.match(why, { why: /uWebSockets.js|UWS_USE_FALLBACK/ }, `${what}: the log says why not uWS`);
    else t.equal(why, undefined, `${what}: no fallback line`);
    t.equal(await gw.stop(), 0);
    // The uWS package warns in plain text; the engine writes JSON lines only.
    const plain = (gw.stdout() + gw.stderr()).split('\n').filter((line) => line !== '' && !line.startsWith('{'));
    t.same(plain, [], `${what}: no word from the uWS package`);
  }
});
