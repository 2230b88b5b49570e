import { fileURLToPath } from 'node:url';
import t from 'tap';
import { deployment, engineEntry, startEngine } from '../helpers/engine.ts';

const hook = fileURLToPath(new URL('../helpers/signal-listeners.js', import.meta.url));

t.test('engine start listens for SIGTERM before it says started, so a signal sent on that line stops it cleanly', async (t) => {
  const d = await deployment(t);
  const engine = await startEngine(['scheduler'], d.env, ['--import', hook, ...engineEntry]);
  const told = engine.logs.find((l) => l['msg'] === 'sigterm listeners');
  t.ok(told !== undefined, 'the hook saw the started line');
  t.ok(Number(told?.['count']) > 0, `SIGTERM listeners when started was written: ${String(told?.['count'])}`);
  t.equal(await engine.stop(), 0, 'a SIGTERM right after started: exit status 0');
  t.match(engine.logs.at(-1), { msg: 'stopped' }, 'it stopped through its roles');
});
