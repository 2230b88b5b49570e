import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/quickstart.sh', import.meta.url));

interface Step {
  comment: string;
  command: string;
  /** The status its comment announces (`-> 202`), if any. */
  status?: number;
}

/** The variable lines, then each command with the comment above it (a command may continue over lines ending in `\`). */
function steps(printed: string): { variables: string; steps: Step[] } {
  const [variables = '', ...blocks] = printed.trim().split(/\n\s*\n/);
  return {
    variables,
    steps: blocks.map((block) => {
      const [comment = '', ...command] = block.split('\n');
      const status = /-> (\d{3})\b/.exec(comment)?.[1];
      return { comment, command: command.join('\n'), ...(status ? { status: Number(status) } : {}) };
    }),
  };
}

function quickStart(sdk: string, rest: string, secret: string, base: string): Promise<string> {
  return run('bash', [script, sdk, rest, secret, base]).then((r) => r.stdout);
}

t.test('every command the quick start prints runs when pasted, with the status it announces', async (t) => {
  const d = await deployment(t);
  const engine = await d.start(['gateway', 'apply', 'recorder', 'fanout', 'dispatch']);
  const printed = await quickStart(d.project.sdk_key, d.project.rest_key, d.project.identity_secret, engine.url);
  const { variables, steps: all } = steps(printed);
  t.ok(all.length >= 10, 'the commands are there');
  for (const step of all) {
    const what = step.comment.replace(/^# /, '');
    t.ok(step.comment.startsWith('# ') && step.command.length > 0, `"${what}": a comment, then the command`);
    // Each runs on its own, after the variable lines only, as when pasted; a failure rejects.
    const { stdout } = await run('bash', ['-c', `${variables}\n${step.command}`], { timeout: 10_000 });
    if (step.status === undefined) t.not(stdout.trim(), '', `"${what}": prints something`);
    else t.match(stdout, new RegExp(`^HTTP/1\\.1 ${step.status} `), `"${what}": answers ${step.status}`);
  }
  const hash = all.find((s) => s.command.includes('openssl'));
  const { stdout } = await run('bash', ['-c', `${variables}\n${hash?.command ?? 'false'}`]);
  t.equal(stdout.trim(), createHmac('sha256', d.project.identity_secret).update('alice').digest('hex'), 'the identity hash is the one the gateway expects');
});

t.test("the README's quick start block is what make run prints", async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  t.equal(block.trim(), (await quickStart('sdk_...', 'rest_...', '...', 'http://127.0.0.1:8080')).trim());
});
