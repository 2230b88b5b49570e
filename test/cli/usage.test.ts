import { readFileSync } from 'node:fs';
import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import type { Command, OptionSpec, ParsedValue } from '../../bin/cli/command.ts';
import { commandTable } from '../../bin/cli/commands.ts';
import { parseCommandLine } from '../../bin/cli/parse.ts';
import { UsageError, synopsis } from '../../bin/cli/usage.ts';
import { RoleNames, type RoleFactory, type RoleName } from '../../engine/infra/runner/roles.ts';
import { runEngine, testEnv } from '../helpers/engine.ts';
import { testPrefix } from '../helpers/redis.ts';

// None of these reach Redis: the prefix only guards against a stray write.
const env = testEnv(testPrefix());

const badInvocations: [string, string[], RegExp][] = [
  ['an unknown command', ['launch'], /unknown command "launch"/],
  ['keys create without --type', ['keys', 'create', 'p1'], /--type sdk\|rest/],
  ['keys create with a bad --type', ['keys', 'create', 'p1', '--type', 'admin'], /--type sdk\|rest/],
  ['project update without on|off', ['project', 'update', 'p1', '--identity-verification', 'maybe'], /on\|off/],
  ['project with no action', ['project'], /project needs/],
  ['an unknown flag', ['keys', 'list', 'p1', '--secret'], /--secret/],
  ['a missing argument', ['keys', 'revoke'], /keys revoke takes <key>/],
  ['an extra argument', ['migrate', 'now'], /migrate takes no arguments/],
  ['start with an unknown role', ['start', '--roles', 'gateway,mailer'], /unknown role "mailer"/],
  ['start with a bad port', ['start', '--port', 'eighty'], /--port must be a number/],
  ['no command at all', [], /a command is needed/],
];

t.test('bad invocations exit 2 with a message and the usage', async (t) => {
  // Each run is a separate process doing no I/O; running them together keeps the suite short.
  const results = await Promise.all(badInvocations.map(([, args]) => runEngine(args, env)));
  badInvocations.forEach(([what, , message], i) => {
    const result = results[i];
    t.equal(result?.code, 2, `${what}: exit status`);
    t.match(result?.stderr, message, `${what}: names the mistake`);
    t.match(result?.stderr, /usage:/, `${what}: prints the usage`);
    t.equal(result?.stdout, '', `${what}: prints nothing on stdout`);
  });
});

t.test('a bad environment value stops the command with a message naming the variable', async (t) => {
  const { code, stderr } = await runEngine(['keys', 'list', 'p1'], { ...env, PARTITIONS: 'abc' });
  t.equal(code, 2);
  t.match(stderr, /PARTITIONS="abc"/);
});

t.test('admission watermarks: the low one must be below the high one', async (t) => {
  t.throws(() => loadConfig({ ADMISSION_HIGH_PERCENT: '60', ADMISSION_LOW_PERCENT: '60' }), /ADMISSION_LOW_PERCENT=60: must be below ADMISSION_HIGH_PERCENT \(60\)/);
  t.throws(() => loadConfig({ ADMISSION_HIGH_PERCENT: '101' }), /ADMISSION_HIGH_PERCENT=101: must be <= 100/);
  t.match(loadConfig({}), { ADMISSION_HIGH_PERCENT: 80, ADMISSION_LOW_PERCENT: 70, REDIS_MEMORY_BUDGET: 0 }, 'defaults: 80 and 70 percent');
});

t.test('SQL_CLICKHOUSE_URL names a server user, so it needs CLICKHOUSE_URL', async (t) => {
  t.throws(() => loadConfig({ SQL_CLICKHOUSE_URL: 'http://operators:x@127.0.0.1:8123/svc' }), /SQL_CLICKHOUSE_URL is set without CLICKHOUSE_URL/);
  t.match(loadConfig({ CLICKHOUSE_URL: 'http://127.0.0.1:8123/svc', SQL_CLICKHOUSE_URL: 'http://operators:x@127.0.0.1:8123/svc' }), { SQL_CLICKHOUSE_URL: 'http://operators:x@127.0.0.1:8123/svc' });
});

t.test('a bad environment value stops start before any role runs', async (t) => {
  const { code, stdout, stderr } = await runEngine(['start', '--port', '0'], { ...env, REDIS_URL: 'http://nowhere' });
  t.equal(code, 2);
  t.match(stderr, /REDIS_URL/);
  t.notMatch(stdout, /started/);
});

t.test('help prints every command with its options and exits 0, whatever the environment', async (t) => {
  const { code, stdout } = await runEngine(['help'], { ...env, PARTITIONS: 'abc' });
  t.equal(code, 0);
  // Without roles, start's option texts differ from the printed ones; the others are exact.
  for (const command of commandTable({})) {
    const name = command.path.join(' ');
    t.match(stdout, `engine ${name}`, name);
    t.match(stdout, command.summary, `${name}: what it does`);
    for (const [option, spec] of Object.entries(command.options)) {
      t.match(stdout, name === 'start' ? `--${option}` : spec.help, `${name}: the meaning of --${option}`);
    }
  }
  const one = await runEngine(['keys', 'create', '--help'], env);
  t.equal(one.code, 0);
  t.match(one.stdout, /engine keys create \[<project_id>\] --type sdk\|rest\|operator \[--json\]/);
  t.notMatch(one.stdout, /engine migrate/, 'only the command asked about');
});

t.test('the usage lists every command and every role that start runs', async (t) => {
  const { stderr } = await runEngine([], env);
  const lines = stderr.split('\n').map((l) => l.trim());
  for (const command of commandTable({})) {
    if (command.path[0] === 'start') continue;
    t.ok(lines.includes(synopsis(command)), `lists ${command.path.join(' ')}`);
  }
  const listed = /engine start \[--roles ([a-z,]+)\]/.exec(stderr)?.[1]?.split(',') ?? [];
  t.ok(listed.includes('recorder'), 'the recorder is among the roles');
  // Each role of the registry is either listed or refused by start as not part of this version.
  for (const role of RoleNames.filter((r) => !listed.includes(r))) {
    const run = await runEngine(['start', '--roles', role], env);
    t.match(run.stderr, new RegExp(`role "${role}" is not part of this version \\(available: ${listed.join(', ')}\\)`), `${role} is not offered`);
  }
});

t.test("the README's command synopsis is the one engine prints", async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## The `engine` command'));
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const { stderr } = await runEngine([], env);
  const printed = stderr.split('\n').filter((l) => l.startsWith('  engine ')).map((l) => l.trim());
  t.same(block.trim().split('\n'), printed);
});

/** A valid value for each option, of its declared kind. */
function sample(option: OptionSpec): { argv: string[]; value: ParsedValue } {
  if (option.kind === 'flag') return { argv: [], value: true };
  if (option.kind === 'integer') return { argv: ['7'], value: 7 };
  if (option.kind === 'number') return { argv: ['2.5'], value: 2.5 };
  const text = option.choices?.[0] ?? 'some text';
  return { argv: [text], value: text };
}

function fullInvocation(command: Command): { argv: string[]; args: Record<string, string>; options: Record<string, ParsedValue> } {
  const args = Object.fromEntries(command.args.map((a) => [a.name, a.choices?.[0] ?? `${a.name}-value`]));
  const argv = [...command.path, ...Object.values(args)];
  const options: Record<string, ParsedValue> = {};
  for (const [name, option] of Object.entries(command.options)) {
    const { argv: value, value: parsed } = sample(option);
    argv.push(`--${name}`, ...value);
    options[name] = parsed;
  }
  return { argv, args, options };
}

t.test("each command's arguments and options parse as declared", async (t) => {
  const roles: Partial<Record<RoleName, RoleFactory>> = { gateway: async () => ({ name: 'gateway', close: async () => undefined }) };
  const table = commandTable(roles);
  for (const command of table) {
    const name = command.path.join(' ');
    const { argv, args, options } = fullInvocation(command);
    const parsed = parseCommandLine(table, argv);
    t.same(parsed, { kind: 'run', command, args, options }, `${name}: every argument and option`);

    const required = Object.entries(command.options).filter(([, o]) => o.required);
    for (const [option] of required) {
      const i = argv.indexOf(`--${option}`);
      const without = argv.filter((_, j) => j !== i && j !== i + 1);
      t.throws(() => parseCommandLine(table, without), UsageError, `${name}: --${option} is required`);
    }
    for (const [option, spec] of Object.entries(command.options)) {
      if (spec.kind === 'flag') continue;
      const bad = spec.kind === 'string' ? (spec.choices ? 'not-a-choice' : undefined) : '-1x';
      if (bad === undefined) continue;
      const i = argv.indexOf(`--${option}`);
      const wrong = argv.map((a, j) => (j === i + 1 ? bad : a));
      t.throws(() => parseCommandLine(table, wrong), UsageError, `${name}: --${option} refuses "${bad}"`);
    }
  }
});
