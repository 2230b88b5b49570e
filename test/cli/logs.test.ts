import t from 'tap';
import { createLogger } from '../../engine/infra/process/log.ts';
import { deployment } from '../helpers/engine.ts';

/** Resolves once `check` holds, polling every 50 ms; rejects after `ms`. */
async function until(check: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('an engine process names the role of each partitions line, logs that it stopped, and logs nothing on stdout', async (t) => {
  const d = await deployment(t);
  const engine = await d.start(['apply', 'recorder']);
  const owned = (role: string) => engine.logs.some((l) => l['msg'] === 'partitions' && l['role'] === role && Array.isArray(l['owned']));
  await until(() => owned('apply') && owned('recorder'), 15_000);
  t.notOk(
    engine.logs.some((l) => l['msg'] === 'partitions' && l['role'] === undefined),
    'no partitions line without its role',
  );
  t.equal(await engine.stop(), 0, 'exit status after SIGTERM');
  const last = engine.logs.at(-1);
  t.match(last, { msg: 'stopped', roles: ['apply', 'recorder'] }, 'the last line says it stopped, with its roles');
  t.ok(engine.logs.some((l) => l['msg'] === 'stopping'), 'after the stopping line');
  t.equal(engine.stdout(), '', 'every log line went to stderr');
});

t.test('a logger in the test process writes to stderr, never to the stdout tap reads', async (t) => {
  const written: { stream: string; text: string }[] = [];
  const streams = { stdout: process.stdout, stderr: process.stderr } as const;
  const originals = { stdout: process.stdout.write, stderr: process.stderr.write };
  for (const name of ['stdout', 'stderr'] as const) {
    streams[name].write = ((chunk: string | Uint8Array) => {
      written.push({ stream: name, text: String(chunk) });
      return true;
    }) as typeof process.stdout.write;
  }
  try {
    const log = createLogger('debug', { worker: 'w' });
    log.debug('one');
    log.info('two');
    log.warn('three');
    log.error('four');
  } finally {
    process.stdout.write = originals.stdout;
    process.stderr.write = originals.stderr;
  }
  t.same(
    written.map((w) => [w.stream, (JSON.parse(w.text) as { msg: string }).msg]),
    [
      ['stderr', 'one'],
      ['stderr', 'two'],
      ['stderr', 'three'],
      ['stderr', 'four'],
    ],
  );
});
