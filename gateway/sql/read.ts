import { readAst, type AstNode } from './ast.ts';
import { SqlError, sqlErrors } from './errors.ts';
import { stringLiteral } from '../../engine/infra/clickhouse/literal.ts';

/** What ClickHouse read of an operator's query, before anything of it runs. */
export interface ReadQuery {
  /** The query as ClickHouse's formatter writes it back: one statement, no comments. It is what runs. */
  text: string;
  ast: AstNode;
  /** The engine's database, where unqualified names resolve. */
  database: string;
  /** The tables of that database. */
  tables: readonly string[];
  /** Every database's name. */
  databases: readonly string[];
}

/** Runs one of the reading queries with the request's parameters; answers the body as text. */
export type Reader = (sql: string, format: 'JSONEachRow' | 'JSONCompactEachRow' | 'TSVRaw') => Promise<string>;

/**
 * A name written in quotes may hold letters, digits, `_`, `$` and `-` only: no space, dot, quote,
 * backslash, bracket or control character, so a name can neither break a line of the AST dump
 * nor pass for two names (docs/sql.md, "What runs").
 */
export const NAME = /^[\p{L}\p{N}_$-]+$/u;
const QUOTED_NAME = /^([`"])[\p{L}\p{N}_$-]+\1$/u;

type Token = [type: string, text: string];

interface Lexed {
  text: string;
  /** Whether the formatter's text holds a `;`, which the engine would take for a second statement. */
  semicolon: boolean;
  /**
   * The quoted names of the formatter's text, which runs: the formatter writes a string where a
   * table goes (`FROM '/etc/passwd'`) as a quoted name, so these are checked as the request's are.
   */
  quoted: Token[];
  tokens: Token[];
  database: string;
  tables: string[];
  databases: string[];
}

/**
 * Reads `sql` with the engine's own parser and lexer (formatQuery, tokenizeQuery), then its AST
 * (`EXPLAIN AST`, which substitutes the query's parameters). The text is never run until then:
 * the first query holds it as a string literal, the second explains the formatter's output,
 * which is one statement whatever comments, heredocs or escapes the request held.
 */
export async function readQuery(read: Reader, sql: string): Promise<ReadQuery> {
  if (sql.includes('\0')) throw sqlErrors.syntax('The query holds a NUL character');
  const lexed = JSON.parse(await read(lexQuery(sql), 'JSONEachRow').catch(withoutScope)) as Lexed;
  checkTokens(lexed.tokens);
  checkTokens(lexed.quoted);
  if (lexed.semicolon) throw sqlErrors.syntax('Multi-statements are not allowed: the formatted query holds a semicolon');
  const ast = readAst(await read(`EXPLAIN AST ${lexed.text}`, 'TSVRaw'));
  return { text: lexed.text, ast, database: lexed.database, tables: lexed.tables, databases: lexed.databases };
}

function lexQuery(sql: string): string {
  return [
    `WITH ${stringLiteral(sql)} AS q`,
    'SELECT formatQuery(q) AS text,',
    "  arrayExists(t -> t.3 = 'Semicolon', tokenizeQuery(text)) AS semicolon,",
    "  arrayMap(t -> ('QuotedIdentifier', substring(text, t.1 + 1, t.2 - t.1)), arrayFilter(t -> t.3 = 'QuotedIdentifier', tokenizeQuery(text))) AS quoted,",
    "  arrayMap(t -> (t.3, substring(q, t.1 + 1, t.2 - t.1)), arrayFilter(t -> t.3 NOT IN ('Whitespace', 'Comment'), tokenizeQuery(q))) AS tokens,",
    '  currentDatabase() AS database,',
    '  (SELECT groupArray(name) FROM system.tables WHERE database = currentDatabase()) AS tables,',
    '  (SELECT groupArray(name) FROM system.databases) AS databases',
  ].join('\n');
}

/** Quoted names within QUOTED_NAME, and no `{name:Identifier}` parameter: a parameter binds a value, never a name. */
function checkTokens(tokens: readonly Token[]): void {
  tokens.forEach(([type, text], i) => {
    if (type === 'QuotedIdentifier' && !QUOTED_NAME.test(text)) {
      throw refused(`the quoted name ${JSON.stringify(text.slice(0, 64))} holds a character names may not (letters, digits, _, $ and - only)`);
    }
    if (type !== 'OpeningCurlyBrace' || tokens[i + 2]?.[0] !== 'Colon') return;
    const close = tokens.findIndex(([t], j) => j > i && t === 'ClosingCurlyBrace');
    const parameterType = tokens.slice(i + 3, close < 0 ? undefined : close);
    if (parameterType.some(([, word]) => /identifier/i.test(word))) {
      throw refused(`the parameter {${tokens[i + 1]?.[1] ?? ''}:${parameterType.map(([, word]) => word).join('')}} would bind a name; parameters bind values only`);
    }
  });
}

/** The formatter's refusal without the reading query it was raised in, so positions are the request's. */
function withoutScope(err: unknown): never {
  if (err instanceof SqlError) throw new SqlError(err.code, err.type, err.message.replace(/\.? ?: In scope [\s\S]*$/, ''), err.status);
  throw err;
}

export function refused(reason: string): SqlError {
  return new SqlError(164, 'READONLY', `Cannot execute query in readonly mode: ${reason}`);
}
