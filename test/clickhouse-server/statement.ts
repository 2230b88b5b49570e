import { skipQuoted } from '../../engine/sql/statement.ts';
import { httpErrors } from './errors.ts';

export { formatClause, identifier, stringLiteral } from '../../engine/sql/statement.ts';

/** `INSERT … FORMAT <name>` whose data follows: the data is not SQL, so it is not scanned. */
const INSERT_FORMAT = /^\s*INSERT\b[\s\S]*?\bFORMAT\s+\w+/i;

/**
 * Refuses more than one statement, as the server does ("Multi-statements are not allowed"), which
 * chDB would otherwise run one after another. Quotes, backquotes and comments are skipped.
 */
export function assertOneStatement(sql: string): void {
  const text = INSERT_FORMAT.exec(sql)?.[0] ?? sql;
  let i = 0;
  let ended = -1;
  while (i < text.length) {
    const c = text[i];
    if (c === "'" || c === '"' || c === '`') {
      i = skipQuoted(text, i, c);
      continue;
    }
    if (text.startsWith('--', i) || c === '#') {
      const eol = text.indexOf('\n', i);
      i = eol < 0 ? text.length : eol + 1;
      continue;
    }
    if (text.startsWith('/*', i)) {
      const close = text.indexOf('*/', i + 2);
      i = close < 0 ? text.length : close + 2;
      continue;
    }
    if (c === ';') ended = i;
    else if (ended >= 0 && !/\s/.test(c ?? '')) throw httpErrors.syntax(`Multi-statements are not allowed: failed at position ${ended + 1} (end of query)`);
    i++;
  }
}
