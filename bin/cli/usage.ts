import type { ArgSpec, Command, OptionSpec } from './command.ts';

/**
 * A command-line mistake: printed with the usage of the commands it concerns (all when
 * `commands` is empty), exit status 2.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';

  constructor(
    message: string,
    readonly commands: readonly Command[] = [],
  ) {
    super(message);
  }
}

/** `keys create`. */
export function commandName(command: Command): string {
  return command.path.join(' ');
}

/** `--type sdk|rest`, `--port <port>`, `--json`. */
export function optionText(name: string, option: OptionSpec): string {
  if (option.kind === 'flag') return `--${name}`;
  return `--${name} ${option.choices ? option.choices.join('|') : (option.value ?? '<value>')}`;
}

function argText(arg: ArgSpec): string {
  const text = `<${arg.choices ? arg.choices.join('|') : arg.name}>`;
  return arg.optional ? `[${text}]` : text;
}

/** One line: `engine keys create <project_id> --type sdk|rest [--json]`. */
export function synopsis(command: Command): string {
  const options = Object.entries(command.options).map(([name, o]) => (o.required ? optionText(name, o) : `[${optionText(name, o)}]`));
  return ['engine', ...command.path, ...command.args.map(argText), ...options].join(' ');
}

/** The synopsis of each command. */
export function usage(commands: readonly Command[]): string {
  return ['usage:', ...commands.map((c) => `  ${synopsis(c)}`)].join('\n');
}

/** The synopsis, summary and options with their meaning of each command, then what to read next. */
export function help(commands: readonly Command[]): string {
  const blocks = commands.map((command) => {
    const options = Object.entries(command.options).map(([name, o]) => [optionText(name, o), o.help] as const);
    const width = Math.max(0, ...options.map(([text]) => text.length));
    return [
      `  ${synopsis(command)}`,
      `      ${command.summary}`,
      ...options.map(([text, meaning]) => `      ${text.padEnd(width)}  ${meaning}`),
    ].join('\n');
  });
  return [
    'usage:',
    blocks.join('\n\n'),
    '',
    'Configuration comes from the environment (README "Configuration").',
    'Exit status: 0 done, 1 the command failed, 2 a usage or configuration mistake.',
  ].join('\n');
}
