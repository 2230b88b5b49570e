import type { Config } from '../../schemas/config.ts';

/**
 * What an option takes: `flag` nothing (true when given), `string` any text (or one of `choices`),
 * `integer` a whole number of at least 0, `number` a finite number of at least 0.
 */
export type OptionKind = 'flag' | 'string' | 'integer' | 'number';

export interface OptionSpec {
  kind: OptionKind;
  /** What to show after the option in the usage (`<port>`); `choices` are shown instead when set. */
  value?: string;
  /** The only values a `string` option accepts. */
  choices?: readonly string[];
  required?: boolean;
  /** Its meaning, for `--help`. */
  help: string;
}

export interface ArgSpec {
  name: string;
  /** The only values the argument accepts. */
  choices?: readonly string[];
  /** May be left out; only the last arguments may be. */
  optional?: boolean;
}

type ArgValue<Arg extends ArgSpec> = (Arg extends { choices: readonly (infer C)[] } ? C : string) | (Arg extends { optional: true } ? undefined : never);

type OptionValue<O extends OptionSpec> = O['kind'] extends 'flag'
  ? boolean
  : O['kind'] extends 'integer' | 'number'
    ? number
    : O extends { choices: readonly (infer C)[] }
      ? C
      : string;

type IsRequired<O extends OptionSpec> = O extends { required: true } ? true : false;

/** The parsed options: required ones always present, the others when given. */
export type OptionValues<Os extends Record<string, OptionSpec>> = {
  [K in keyof Os as IsRequired<Os[K]> extends true ? K : never]: OptionValue<Os[K]>;
} & {
  [K in keyof Os as IsRequired<Os[K]> extends true ? never : K]?: OptionValue<Os[K]>;
};

/** What a command's handler gets, checked against its declaration. */
export interface CommandInput<A extends readonly ArgSpec[], Os extends Record<string, OptionSpec>> {
  args: { [Arg in A[number] as Arg['name']]: ArgValue<Arg> };
  options: OptionValues<Os>;
}

/** One command as declared: the parser and the usage text are both derived from it. */
export interface CommandSpec<A extends readonly ArgSpec[], Os extends Record<string, OptionSpec>> {
  /** The words that name it: `['keys', 'create']`. */
  path: readonly string[];
  /** Positional arguments, in order; required unless `optional`. */
  args: A;
  options: Os;
  /** One line saying what it does. */
  summary: string;
  /** Runs it; the exit status. Configuration is loaded only once the command line parsed. */
  run(config: Config, input: CommandInput<A, Os>): Promise<number>;
}

export type ParsedValue = string | number | boolean;

/** A declared command with its types erased, as the table holds it. */
export interface Command {
  path: readonly string[];
  args: readonly ArgSpec[];
  options: Readonly<Record<string, OptionSpec>>;
  summary: string;
  run(config: Config, input: { args: Record<string, string | undefined>; options: Record<string, ParsedValue> }): Promise<number>;
}

/** Declares a command; its handler sees arguments and options typed after the declaration. */
export function defineCommand<const A extends readonly ArgSpec[], const Os extends Record<string, OptionSpec>>(spec: CommandSpec<A, Os>): Command {
  return {
    path: spec.path,
    args: spec.args,
    options: spec.options,
    summary: spec.summary,
    // The parser (./parse.ts) checks every argument and option against this same declaration.
    run: (config, input) => spec.run(config, input as unknown as CommandInput<A, Os>),
  };
}
