import { SHEBANGS, type AnyContract } from './contract.ts';

/** What a script's header comment declares (docs/architecture.md#lua-scripts). */
export interface Header {
  /** The first line when it is a shebang (`#!lua flags=allow-oom`). */
  shebang?: string;
  keys: { index: number; name: string }[];
  /** A list of KEYS from KEYS[1]; `item` names the keys of one item. */
  keyList?: { name: string; item: string[] };
  args: { index: number; name: string }[];
  /** A trailing list from ARGV[first]; `item` names the slots of one item when it takes several. */
  variadic?: { first: number; name: string; item: string[] };
  /** The fields of a `Returns {a, b, ...}` line, when the script returns a table. */
  returns?: string[];
}

/** Script files are `<command>-<numberOfKeys>.lua`, or `<command>-n.lua` for a key list. */
export const SCRIPT_FILE = /^([A-Za-z]+)-(\d+|n)\.lua$/;

/**
 * Parses the header of a script, after its shebang line: lines `KEYS[i] name  description` (or
 * `KEYS[1], KEYS[2], ...  name {a, b}` for a key list), `ARGV[i] name  description`,
 * `ARGV[i], ARGV[i+1], ...  name  description` for a trailing list (`name {a, b}` when each item
 * takes several slots), and `Returns {field, ...}`.
 */
export function parseHeader(source: string): Header {
  const shebang = /^#!.*/.exec(source)?.[0];
  const body = shebang === undefined ? source : source.slice(shebang.length + 1);
  const comment = /^--\[\[([\s\S]*?)\]\]/.exec(body)?.[1] ?? '';
  const header: Header = { keys: [], args: [] };
  if (shebang !== undefined) header.shebang = shebang;
  for (const line of comment.split('\n')) {
    const keyList = /^\s*KEYS\[1\], KEYS\[2\], \.\.\.\s+([A-Za-z]\w*) \{([^}]*)\}/.exec(line);
    const key = /^\s*KEYS\[(\d+)\]\s+([A-Za-z]\w*)/.exec(line);
    const list = /^\s*ARGV\[(\d+)\], ARGV\[\d+\], \.\.\.\s+([A-Za-z]\w*)(?: \{([^}]*)\})?/.exec(line);
    const arg = /^\s*ARGV\[(\d+)\]\s+([A-Za-z]\w*)/.exec(line);
    const returns = /^\s*Returns \{([^}]*)\}/.exec(line);
    if (keyList) header.keyList = { name: keyList[1] ?? '', item: fieldList(keyList[2] ?? '') };
    else if (key) header.keys.push({ index: Number(key[1]), name: key[2] ?? '' });
    else if (list) header.variadic = { first: Number(list[1]), name: list[2] ?? '', item: list[3] === undefined ? [] : fieldList(list[3]) };
    else if (arg) header.args.push({ index: Number(arg[1]), name: arg[2] ?? '' });
    else if (returns) header.returns = fieldList(returns[1] ?? '');
  }
  return header;
}

function fieldList(text: string): string[] {
  return text.split(',').map((f) => f.trim());
}

function sameList(what: string, header: { index: number; name: string }[], declared: readonly string[]): string[] {
  const problems: string[] = [];
  header.forEach((h, i) => {
    if (h.index !== i + 1) problems.push(`${what}[${h.index}] is listed where ${what}[${i + 1}] belongs`);
  });
  const names = header.map((h) => h.name).join(', ');
  if (names !== declared.join(', ')) problems.push(`${what}: header lists [${names}], declared [${declared.join(', ')}]`);
  return problems;
}

/** How the file name's key count and the header's KEYS disagree with the declared keys or key list. */
function keyProblems(count: string | undefined, header: Header, contract: AnyContract): string[] {
  const declared = contract.keyList;
  if (!declared) {
    const problems = sameList('KEYS', header.keys, contract.keys);
    if (Number(count) !== contract.keys.length) problems.unshift(`file name says ${count} keys, declared ${contract.keys.length}`);
    if (header.keyList) problems.push(`header lists KEYS ${header.keyList.name}, no key list declared`);
    return problems;
  }
  const problems: string[] = [];
  if (count !== 'n') problems.push(`file name says ${count} keys, declared key list ${declared.name} needs -n`);
  if (contract.keys.length > 0 || header.keys.length > 0) problems.push('a script with a key list names no other KEYS');
  const list = header.keyList;
  if (!list) problems.push(`declared key list ${declared.name} is not in the header`);
  else if (list.name !== declared.name || list.item.join(', ') !== declared.item.join(', ')) {
    problems.push(`key list: header ${list.name} {${list.item.join(', ')}}, declared ${declared.name} {${declared.item.join(', ')}}`);
  }
  return problems;
}

/** How a script file's name and header disagree with its declaration; empty when they agree. */
export function headerProblems(file: string, source: string, contract: AnyContract): string[] {
  const problems: string[] = [];
  const match = SCRIPT_FILE.exec(file);
  if (match?.[1] !== contract.name) problems.push(`file name does not name command ${contract.name}`);
  const header = parseHeader(source);
  problems.push(...keyProblems(match?.[2], header, contract));
  if (header.shebang !== SHEBANGS[contract.oom]) problems.push(`first line is ${JSON.stringify(header.shebang ?? '')}, declared oom '${contract.oom}' needs ${JSON.stringify(SHEBANGS[contract.oom])}`);
  problems.push(...sameList('ARGV', header.args, contract.args));
  const list = header.variadic;
  const declared = contract.variadic;
  if (list && !declared) problems.push(`header lists ARGV ${list.name} from ${list.first}, none declared`);
  if (declared && !list) problems.push(`declared ARGV ${declared.name} is not in the header`);
  if (list && declared) {
    if (list.name !== declared.name) problems.push(`variadic ARGV: header names ${list.name}, declared ${declared.name}`);
    if (list.first !== contract.args.length + 1) problems.push(`variadic ARGV starts at ${list.first}, declared after ARGV[${contract.args.length}]`);
    const item = (declared.item ?? []).join(', ');
    if (list.item.join(', ') !== item) problems.push(`variadic ARGV item: header {${list.item.join(', ')}}, declared {${item}}`);
  }
  const returns = (header.returns ?? []).join(', ');
  const fields = (contract.reply.fields ?? []).join(', ');
  if (returns !== fields) problems.push(`reply: header returns {${returns}}, declared {${fields}}`);
  return problems.map((p) => `${file}: ${p}`);
}

/** Every disagreement between the script files (name -> source) and the declarations, both ways. */
export function scriptProblems(files: ReadonlyMap<string, string>, contracts: readonly AnyContract[]): string[] {
  const problems: string[] = [];
  const byName = new Map(contracts.map((c) => [c.name, c]));
  for (const [file, source] of files) {
    const name = SCRIPT_FILE.exec(file)?.[1];
    const contract = name === undefined ? undefined : byName.get(name);
    if (!contract) problems.push(`${file}: no declaration in engine/infra/scripts`);
    else problems.push(...headerProblems(file, source, contract));
  }
  const declared = new Set([...files.keys()].map((f) => SCRIPT_FILE.exec(f)?.[1]));
  for (const c of contracts) if (!declared.has(c.name)) problems.push(`${c.name}: declared, but engine/infra/scripts/lua has no ${c.name}-<keys>.lua`);
  return problems;
}
