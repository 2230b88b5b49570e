import { parseArgs } from 'node:util';
import type { Command, OptionSpec, ParsedValue } from './command.ts';
import { UsageError, commandName, optionText } from './usage.ts';

/** What a command line asks for: a command to run, or the help of some commands. */
export type Invocation =
  | { kind: 'run'; command: Command; args: Record<string, string | undefined>; options: Record<string, ParsedValue> }
  | { kind: 'help'; commands: readonly Command[] };

const helpWords = ['help', '--help', '-h'];

/**
 * Matches `argv` to a command of `table` by its leading words and checks its arguments and
 * options against the declaration. `help`, `--help` or `-h` ask for the help of every command,
 * or of those the words around them name (`engine keys --help`). Throws UsageError.
 */
export function parseCommandLine(table: readonly Command[], argv: readonly string[]): Invocation {
  const [first, second] = argv;
  if (first === undefined) throw new UsageError('a command is needed');
  if (helpWords.includes(first)) return { kind: 'help', commands: matching(table, argv.slice(1)) };
  const group = table.filter((c) => c.path[0] === first);
  if (group.length === 0) throw new UsageError(`unknown command "${first}"`);
  if (argv.some((a) => a === '--help' || a === '-h')) return { kind: 'help', commands: matching(table, argv) };
  const command = group.find((c) => c.path.every((word, i) => argv[i] === word));
  if (!command) {
    const actions = group.map((c) => c.path.slice(1).join(' ')).join(', ');
    throw new UsageError(`${first} needs one of: ${actions}${second === undefined ? '' : ` (got "${second}")`}`, group);
  }
  return { kind: 'run', command, ...check(command, argv.slice(command.path.length)) };
}

/** The commands named by the leading words of `words` (all when none are). */
function matching(table: readonly Command[], words: readonly string[]): readonly Command[] {
  const path = words.filter((w) => !w.startsWith('-'));
  const found = table.filter((c) => path.every((word, i) => i >= c.path.length || c.path[i] === word));
  return found.length > 0 ? found : table;
}

function check(command: Command, rest: readonly string[]): { args: Record<string, string | undefined>; options: Record<string, ParsedValue> } {
  const name = commandName(command);
  const fail = (message: string): never => {
    throw new UsageError(message, [command]);
  };
  let parsed: { positionals: string[]; values: Record<string, string | boolean | undefined> };
  try {
    const options = Object.fromEntries(Object.entries(command.options).map(([n, o]) => [n, { type: o.kind === 'flag' ? ('boolean' as const) : ('string' as const) }]));
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
  } catch (err) {
    return fail(`${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const expected = command.args.map((a) => (a.optional ? `[<${a.name}>]` : `<${a.name}>`)).join(' ');
  const required = command.args.filter((a) => !a.optional).length;
  if (parsed.positionals.length < required || parsed.positionals.length > command.args.length) {
    fail(
      command.args.length === 0
        ? `${name} takes no arguments`
        : `${name} takes ${expected}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.map((p) => `"${p}"`).join(' ')}`,
    );
  }
  const args: Record<string, string | undefined> = {};
  command.args.forEach((arg, i) => {
    const value = parsed.positionals[i];
    if (value === undefined) return;
    if (arg.choices && !arg.choices.includes(value)) fail(`${name}: unknown ${arg.name} "${value}" (${arg.choices.join(', ')})`);
    args[arg.name] = value;
  });
  const options: Record<string, ParsedValue> = {};
  for (const [option, spec] of Object.entries(command.options)) {
    const raw = parsed.values[option];
    if (raw === undefined) {
      if (spec.required) fail(`${name} needs ${optionText(option, spec)}`);
      continue;
    }
    options[option] = typeof raw === 'boolean' ? raw : convert(option, spec, raw, fail);
  }
  return { args, options };
}

function convert(name: string, spec: OptionSpec, raw: string, fail: (message: string) => never): ParsedValue {
  if (spec.choices && !spec.choices.includes(raw)) fail(`${optionText(name, spec)} expected, got "${raw}"`);
  if (spec.kind === 'integer') {
    if (!/^\d{1,15}$/.test(raw)) fail(`--${name} must be a number (whole, at least 0), got "${raw}"`);
    return Number(raw);
  }
  if (spec.kind === 'number') {
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value) || value < 0) fail(`--${name} must be a number (at least 0), got "${raw}"`);
    return value;
  }
  return raw;
}
