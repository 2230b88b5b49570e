import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('./queries/', import.meta.url));
const switchTag = /\s*--\s*@(if|unless)\s+([a-z_]+)\s*$/;
const loaded = new Map<string, QueryFile>();

/**
 * One query of ./queries, read once per process; values travel as `{name:Type}` parameters. A line
 * ending in `-- @if <switch>` is kept only when that switch is on, `-- @unless <switch>` only when
 * it is off, so optional filters need no Nullable parameters (docs/architecture.md, "Queries").
 */
export class QueryFile {
  /** Every switch the file's lines use. */
  readonly switches: ReadonlySet<string>;
  /** Each line with the switch it depends on, and whether it is kept when that switch is on (`@if`) or off (`@unless`). */
  private readonly lines: { text: string; when: string | null; keptWhenOn: boolean }[];
  private readonly texts = new Map<string, string>();

  private constructor(
    readonly name: string,
    source: string,
  ) {
    this.lines = source
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('--'))
      .map((line) => {
        const match = switchTag.exec(line);
        return match ? { text: line.slice(0, match.index), when: match[2] ?? null, keptWhenOn: match[1] === 'if' } : { text: line, when: null, keptWhenOn: true };
      });
    this.switches = new Set(this.lines.flatMap((l) => (l.when === null ? [] : [l.when])));
  }

  /** queries/<name>.sql, read on first use. */
  static load(name: string): QueryFile {
    let file = loaded.get(name);
    if (file === undefined) {
      file = new QueryFile(name, readFileSync(`${dir}${name}.sql`, 'utf8'));
      loaded.set(name, file);
    }
    return file;
  }

  /** The query text with the lines of the switches turned on; an unknown switch is a bug and throws. */
  text(on: readonly string[]): string {
    const key = [...on].sort().join(',');
    let text = this.texts.get(key);
    if (text !== undefined) return text;
    for (const s of on) if (!this.switches.has(s)) throw new Error(`query ${this.name} has no switch "${s}"`);
    text = this.lines
      .filter((l) => l.when === null || on.includes(l.when) === l.keptWhenOn)
      .map((l) => l.text)
      .join('\n');
    // Bounded: at most one text per combination of the file's few switches.
    this.texts.set(key, text);
    return text;
  }
}
