/** A script argument as ioredis sends it. */
export type Arg = string | number;

/** A command defineCommand put on a client; its reply is parsed by the script's contract. */
export type Command = (...args: Arg[]) => Promise<unknown>;

/**
 * What a script may do when Redis is at maxmemory (docs/architecture.md#progress-at-the-memory-limit),
 * declared in its first line, a Redis 7 shebang:
 * - `allow`: `#!lua flags=allow-oom`, it runs at maxmemory: it frees memory, or it is the bounded
 *   step that lets the workers free it;
 * - `refuse`: `#!lua`, refused whole at maxmemory (never half run): it brings new work;
 * - `read`: `#!lua flags=no-writes`, it only reads, which Redis allows at maxmemory.
 */
export type OomPolicy = 'allow' | 'refuse' | 'read';

/** The shebang line of each policy. */
export const SHEBANGS: Record<OomPolicy, string> = { allow: '#!lua flags=allow-oom', refuse: '#!lua', read: '#!lua flags=no-writes' };

/** The trailing ARGV of a script that takes a list: its header name, and how a call fills it. */
export interface Variadic<V> {
  readonly name: string;
  /** The ARGV slots of one item, when it takes more than one (e.g. id, json). */
  readonly item?: readonly string[];
  spread(call: V): Arg[];
}

/**
 * The KEYS of a script that takes a list of records (e.g. one item per user), all in one slot: the
 * file is `<name>-n.lua`, and the call sends the number of keys first.
 */
export interface KeyList<V> {
  readonly name: string;
  /** The keys of one item. */
  readonly item: readonly string[];
  spread(call: V): string[];
}

/** How a script's reply is read: the named fields of a table reply, if it is one, and the parser. */
export interface Reply<R> {
  readonly fields?: readonly string[];
  /** Bulk strings come back as Buffers (bytes such as MessagePack, which a string would mangle). */
  readonly binary?: boolean;
  parse(raw: unknown): R;
}

/**
 * The contract of one engine/infra/scripts/lua script, declared once: the loader checks the Lua header against
 * it (engine/infra/scripts/header.ts) and the typed wrapper builds the call from it.
 */
export interface ScriptContract<N extends string, K extends string, A extends string, V, R> {
  /** The command name; the file is `<name>-<keys.length>.lua`, or `<name>-n.lua` with a key list. */
  readonly name: N;
  readonly keys: readonly K[];
  /** Instead of `keys` (then empty): the keys as a list of items. */
  readonly keyList?: KeyList<V>;
  readonly args: readonly A[];
  readonly oom: OomPolicy;
  readonly variadic?: Variadic<V>;
  readonly reply: Reply<R>;
}

/** The named arguments of one call (`keys` is empty for a script with a key list). */
export type ScriptCall<K extends string, A extends string, V> = {
  keys: Record<K, string>;
  args: Record<A, Arg>;
} & V;

/** A typed wrapper calling one script on any client it was loaded on, with its contract attached. */
export interface Script<N extends string, K extends string, A extends string, V, R> {
  (client: Record<N, Command>, call: ScriptCall<K, A, V>): Promise<R>;
  readonly contract: ScriptContract<N, K, A, V, R>;
}

/** Any script's contract, as the loader and the header check see it. */
export interface AnyContract {
  readonly name: string;
  readonly keys: readonly string[];
  readonly keyList?: { readonly name: string; readonly item: readonly string[] };
  readonly args: readonly string[];
  readonly oom: OomPolicy;
  readonly variadic?: { readonly name: string; readonly item?: readonly string[] };
  readonly reply: { readonly fields?: readonly string[] };
}

/** Declares a script: KEYS (or the key list, counted) then ARGV in declared order, then the variadic part, reply parsed. */
export function defineScript<N extends string, K extends string, A extends string, R, V = Record<never, never>>(
  contract: ScriptContract<N, K, A, V, R>,
): Script<N, K, A, V, R> {
  const run = async (client: Record<N, Command>, call: ScriptCall<K, A, V>): Promise<R> => {
    const argv: Arg[] = [];
    if (contract.keyList) {
      const keys = contract.keyList.spread(call);
      argv.push(keys.length, ...keys);
    } else {
      for (const k of contract.keys) argv.push(call.keys[k]);
    }
    for (const a of contract.args) argv.push(call.args[a]);
    if (contract.variadic) argv.push(...contract.variadic.spread(call));
    // defineCommand puts a `<name>Buffer` variant beside each command on the client.
    const command = contract.reply.binary === true ? (client as Partial<Record<string, Command>>)[`${contract.name}Buffer`] : client[contract.name];
    if (command === undefined) throw new Error(`${contract.name}: the client has no ${contract.name}Buffer command`);
    return contract.reply.parse(await command.apply(client, argv));
  };
  return Object.assign(run, { contract });
}

/** Reads a table reply into its named fields, failing on any other shape (a script bug). */
export function fields<F extends string>(name: string, names: readonly F[], raw: unknown): Record<F, unknown> {
  if (!Array.isArray(raw) || raw.length !== names.length) {
    throw new Error(`${name}: expected a reply of ${names.length} fields, got ${JSON.stringify(raw)}`);
  }
  return Object.fromEntries(names.map((n, i) => [n, raw[i] as unknown])) as Record<F, unknown>;
}

/** An integer reply or field; anything else is a script bug. */
export function int(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw new Error(`${name}: expected an integer, got ${JSON.stringify(value)}`);
  return value;
}

/** A bulk-string reply or field; anything else is a script bug. */
export function str(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new Error(`${name}: expected a string, got ${JSON.stringify(value)}`);
  return value;
}

/** A list reply or field of bulk strings; anything else is a script bug. */
export function strings(name: string, value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string')) throw new Error(`${name}: expected strings, got ${JSON.stringify(value)}`);
  return value as string[];
}

/** A 1/0 reply as a boolean. */
export function flag(name: string, value: unknown): boolean {
  const n = int(name, value);
  if (n !== 0 && n !== 1) throw new Error(`${name}: expected 1 or 0, got ${n}`);
  return n === 1;
}
