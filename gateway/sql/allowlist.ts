import type { AstNode } from './ast.ts';
import type { FunctionCatalog } from './catalog.ts';
import { NAME, refused, type ReadQuery } from './read.ts';

/**
 * What an operator's query may be, decided on the tree ClickHouse parsed (docs/sql.md, "What
 * runs"): one SELECT (with WITH, UNION, INTERSECT, EXCEPT and subqueries), EXPLAIN of one, or
 * DESCRIBE or SHOW CREATE TABLE of a table it may read; made only of the node kinds below, whose
 * dump shows all they hold, reading only the engine's tables and a few of `system`, through the table
 * functions below, calling only the catalog's functions; no INTO OUTFILE, no SETTINGS clause.
 */

/** The tables operators read (docs/sql.md, "The tables"), in the engine's database. */
export const ENGINE_TABLES: ReadonlySet<string> = new Set(['message_deliveries', 'receipts', 'events', 'users', 'webhook_attempts']);
/** Of `system`: tables that hold nothing but numbers. */
export const SYSTEM_TABLES: ReadonlySet<string> = new Set(['one', 'numbers', 'numbers_mt', 'zeros', 'zeros_mt']);
/** Table functions that make rows of their arguments alone (compared without case, as the engine names them). */
export const TABLE_FUNCTIONS: ReadonlySet<string> = new Set(['numbers', 'numbers_mt', 'generate_series', 'generateseries', 'values']);
/**
 * The statements allowed, as the dump names them. Not `ShowTables`: SHOW TABLES, DATABASES,
 * SETTINGS and the like all dump as that one line, without their LIMIT or WHERE expressions.
 */
const STATEMENTS = new Set(['SelectWithUnionQuery', 'Explain', 'DescribeQuery', 'ShowCreateTableQuery']);
/** EXPLAIN kinds, as the dump names them: EXPLAIN (PLAN), PIPELINE, AST, SYNTAX, QUERY TREE, ESTIMATE. */
const EXPLAIN_KINDS = new Set(['EXPLAIN', 'EXPLAIN PIPELINE', 'EXPLAIN AST', 'EXPLAIN SYNTAX', 'EXPLAIN QUERY TREE', 'EXPLAIN ESTIMATE']);

/**
 * The node kinds a SELECT is made of, each of which dumps every expression it holds as a child.
 * Not `ColumnsApplyTransformer` (`* APPLY(f)`), whose function or lambda the dump leaves out.
 */
const SELECT_NODES = new Set([
  'SelectWithUnionQuery', 'SelectIntersectExceptQuery', 'SelectQuery', 'ExpressionList', 'TablesInSelectQuery', 'TablesInSelectQueryElement',
  'TableExpression', 'TableJoin', 'ArrayJoin', 'Subquery', 'WithElement', 'Identifier', 'TableIdentifier', 'Function', 'Literal', 'Asterisk',
  'QualifiedAsterisk', 'ColumnsRegexpMatcher', 'ColumnsListMatcher', 'QualifiedColumnsRegexpMatcher', 'QualifiedColumnsListMatcher',
  'ColumnsTransformerList', 'ColumnsExceptTransformer', 'ColumnsReplaceTransformer',
  'ColumnsReplaceTransformer::Replacement', 'OrderByElement', 'WindowDefinition', 'WindowListElement', 'InterpolateElement', 'SampleRatio',
]);

/** Functions whose second argument, a bare name, is a table: `x IN t`. */
const IN_FUNCTIONS = new Set(
  ['in', 'notIn', 'globalIn', 'globalNotIn', 'nullIn', 'notNullIn', 'globalNullIn', 'globalNotNullIn'].flatMap((name) => [name, `${name}IgnoreSet`]),
);

export interface Allowed {
  /** The output format the query names (`FORMAT x`), if any. */
  format: string | undefined;
}

/** Throws a READONLY refusal with the reason unless `query` is within the allowlist. */
export function allowStatement(query: ReadQuery, functions: FunctionCatalog): Allowed {
  return new Walk(query, functions).statement(query.ast);
}

class Walk {
  constructor(
    private readonly query: ReadQuery,
    private readonly functions: FunctionCatalog,
  ) {}

  statement(root: AstNode): Allowed {
    if (!STATEMENTS.has(root.type)) throw refused(`${statementName(root)} is not a read; allowed: SELECT, EXPLAIN, DESCRIBE, SHOW CREATE TABLE`);
    const children = [...root.children];
    if (children.some((child) => child.type === 'Literal')) throw refused('INTO OUTFILE is not allowed: an answer comes back over HTTP only');
    const format = (own: number): string | undefined => {
      if (children.length > own + 1) throw refused(`${statementName(root)} in an unexpected shape`);
      const last = children.length > own ? children.pop() : undefined;
      if (last && last.type !== 'Identifier') throw refused(`${statementName(root)} in an unexpected shape`);
      return last?.text;
    };
    switch (root.type) {
      case 'SelectWithUnionQuery': {
        const named = format(1);
        this.select(root, children);
        return { format: named };
      }
      case 'Explain': {
        if (!EXPLAIN_KINDS.has(root.text)) throw refused(`${root.text} is not among the EXPLAIN kinds allowed (PLAN, PIPELINE, AST, SYNTAX, QUERY TREE, ESTIMATE)`);
        const options = children[0]?.type === 'Set' ? children.shift() : undefined;
        if (options && options.children.length > 0) throw refused('EXPLAIN options in an unexpected shape');
        const named = format(1);
        const explained = children[0];
        if (explained?.type !== 'SelectWithUnionQuery') throw refused('EXPLAIN explains one SELECT only');
        this.select(explained, explained.children);
        return { format: named };
      }
      case 'DescribeQuery': {
        const named = format(1);
        if (children[0]?.type !== 'TableExpression') throw refused('DESCRIBE names one table or subquery');
        this.node(children[0], root);
        return { format: named };
      }
      case 'ShowCreateTableQuery': {
        // The dump writes `<database> <table>` after the kind (an empty database when none is named).
        const [database, table] = splitOnce(root.text, ' ');
        const named = format(database === '' ? 1 : 2);
        this.table(database === '' ? table : `${database}.${table}`);
        return { format: named };
      }
      default:
        throw refused(`${statementName(root)} is not a read`);
    }
  }

  /** A SELECT statement or subquery: its list of SELECTs and nothing after it. */
  private select(node: AstNode, children: readonly AstNode[]): void {
    if (children.length !== 1 || children[0]?.type !== 'ExpressionList') throw refused('a SELECT in an unexpected shape');
    this.node(children[0], node);
  }

  private node(node: AstNode, parent: AstNode): void {
    if (node.type === 'Set') throw refused('a SETTINGS clause changes settings; send limits and output settings as URL parameters');
    if (node.type === 'ColumnsApplyTransformer') throw refused("APPLY is not allowed: the parse tree does not show what it calls");
    if (!SELECT_NODES.has(node.type)) throw refused(`${node.type} is not part of a SELECT`);
    if (node.type === 'SelectWithUnionQuery') return this.select(node, node.children);
    if (node.type === 'TableIdentifier') this.table(node.text);
    if (node.type === 'Identifier') this.name(node.text);
    if (node.type === 'Function') this.function(node, parent);
    for (const child of node.children) this.node(child, node);
  }

  private function(node: AstNode, parent: AstNode): void {
    if (parent.type === 'TableExpression') {
      if (!TABLE_FUNCTIONS.has(node.text.toLowerCase())) {
        throw refused(`the table function ${node.text}() reaches outside the engine's tables; allowed: ${[...TABLE_FUNCTIONS].join(', ')}`);
      }
      return;
    }
    if (!this.functions.allows(node.text)) throw refused(`the function ${node.text}() is not allowed: it reaches outside the query's own rows`);
    const table = IN_FUNCTIONS.has(node.text) ? node.children[0]?.children[1] : undefined;
    if (table?.type === 'Identifier') this.table(table.text);
  }

  /**
   * A name anywhere may stand for a table (`WITH secret AS t … IN t`): it may not be one of the
   * engine database's tables operators do not read, nor start with another database's name.
   */
  private name(name: string): void {
    const [first = '', second] = name.split('.');
    if (this.query.tables.includes(first) && !ENGINE_TABLES.has(first)) this.table(first);
    if (second !== undefined && this.query.databases.includes(first)) this.table(`${first}.${second}`);
  }

  /**
   * A table name as written: `db.table` must be one of the engine's tables or of SYSTEM_TABLES; a
   * bare name one of the engine's tables, or a name the engine's database does not hold (a WITH
   * subquery's name, or else the engine answers that no such table exists).
   */
  private table(name: string): void {
    const parts = name.split('.');
    if (!parts.every((part) => NAME.test(part))) throw refused(`the table name ${JSON.stringify(name)} holds a character names may not (letters, digits, _, $ and - only)`);
    const [first = '', second] = parts;
    const allowed =
      parts.length === 1
        ? ENGINE_TABLES.has(first) || !this.query.tables.includes(first)
        : parts.length === 2 && second !== undefined && ((first === this.query.database && ENGINE_TABLES.has(second)) || (first === 'system' && SYSTEM_TABLES.has(second)));
    if (!allowed) {
      throw refused(`the table ${name} is not one operators read; allowed: ${[...ENGINE_TABLES].join(', ')} and system.${[...SYSTEM_TABLES].join(', system.')}`);
    }
  }
}

function splitOnce(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + separator.length)];
}

function statementName(root: AstNode): string {
  return root.type.replace(/Query$/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
}
