import { sqlErrors } from './errors.ts';

/**
 * Refuses more than one statement, as a ClickHouse server does ("Multi-statements are not
 * allowed"), which the embedded engine would otherwise run one after another. Quotes, backquotes
 * and comments are skipped.
 */
export function assertOneStatement(sql: string): void {
  let i = 0;
  let ended = -1;
  while (i < sql.length) {
    const c = sql[i];
    if (c === "'" || c === '"' || c === '`') {
      i = skipQuoted(sql, i, c);
      continue;
    }
    if (sql.startsWith('--', i) || c === '#') {
      const eol = sql.indexOf('\n', i);
      i = eol < 0 ? sql.length : eol + 1;
      continue;
    }
    if (sql.startsWith('/*', i)) {
      const close = sql.indexOf('*/', i + 2);
      i = close < 0 ? sql.length : close + 2;
      continue;
    }
    if (c === ';') ended = i;
    else if (ended >= 0 && !/\s/.test(c ?? '')) throw sqlErrors.syntax(`Multi-statements are not allowed: failed at position ${ended + 1} (end of query)`);
    i++;
  }
}

/** Index after the closing quote of the literal opening at `start`; `\x` and doubled quotes escape. */
function skipQuoted(text: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === quote && text[i + 1] === quote) i += 2;
    else if (text[i] === quote) return i + 1;
    else i++;
  }
  return i;
}

/** The format named by a trailing `FORMAT x` clause. */
export function formatClause(sql: string): string | undefined {
  return /\bFORMAT\s+(\w+)\s*;?\s*$/i.exec(sql)?.[1];
}

/** A ClickHouse string literal holding `text` exactly. */
export function stringLiteral(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** A ClickHouse identifier, backquoted. */
export function identifier(name: string): string {
  return `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
}
