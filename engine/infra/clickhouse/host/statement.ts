/** `INSERT … FORMAT <name>` whose data follows: the data is not SQL, so the parser reads the head only. */
const INSERT_FORMAT = /^\s*INSERT\b[\s\S]*?\bFORMAT\s+\w+/i;

/** The part of a request's SQL the parser reads. */
export function statementText(sql: string): string {
  return INSERT_FORMAT.exec(sql)?.[0] ?? sql;
}

/** The format named by a trailing `FORMAT x` clause, for the X-ClickHouse-Format header. */
export function formatClause(sql: string): string | undefined {
  return /\bFORMAT\s+(\w+)\s*;?\s*$/i.exec(sql)?.[1];
}
