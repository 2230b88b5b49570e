import { SqlError, sqlErrors } from './errors.ts';

/** Statements read-only mode lets through that change the engine or its files. */
const FORBIDDEN_START = /^\s*(KILL|BACKUP|RESTORE)\b/i;

/**
 * Refuses what read-only mode does not (docs/sql.md, "Read-only, and the limits"): more than one
 * statement, as a ClickHouse server does ("Multi-statements are not allowed"), which the embedded
 * engine would otherwise run one after another; `INTO OUTFILE`, which the embedded engine would
 * write on this machine; KILL (every query runs as the engine's own user, so it could stop the
 * recorder's), BACKUP and RESTORE; and the function `file()`, which reads this machine's files.
 * Literals and comments are skipped; quoted identifiers are read as the names they are.
 */
export function checkStatement(sql: string): void {
  const text = code(sql);
  const end = text.indexOf(';');
  if (end >= 0 && text.slice(end + 1).trim() !== '') throw sqlErrors.syntax(`Multi-statements are not allowed: failed at position ${end + 1} (end of query)`);
  if (/\bINTO\s+OUTFILE\b/i.test(text)) throw new SqlError(358, 'INTO_OUTFILE_NOT_ALLOWED', 'INTO OUTFILE is not allowed');
  if (FORBIDDEN_START.test(text)) throw new SqlError(164, 'READONLY', 'Cannot execute query in readonly mode');
  if (/(^|[^\w.])file\s*\(/.test(text)) throw new SqlError(164, 'READONLY', "The function file() reads the server's files: not in readonly mode");
}

/** The query with string literals emptied, quoted identifiers unquoted and comments made spaces. */
function code(sql: string): string {
  let out = '';
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] ?? '';
    if (c === "'" || c === '"' || c === '`') {
      const close = skipQuoted(sql, i, c);
      out += c === "'" ? "''" : ` ${sql.slice(i + 1, close - 1).replace(/;/g, ' ')} `;
      i = close;
    } else if (sql.startsWith('--', i) || c === '#') {
      const eol = sql.indexOf('\n', i);
      i = eol < 0 ? sql.length : eol + 1;
      out += ' ';
    } else if (sql.startsWith('/*', i)) {
      const close = sql.indexOf('*/', i + 2);
      i = close < 0 ? sql.length : close + 2;
      out += ' ';
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Index after the closing quote of the literal opening at `start`; `\x` and doubled quotes escape. */
export function skipQuoted(text: string, start: number, quote: string): number {
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
