import { SqlError } from './errors.ts';

/** One node of ClickHouse's `EXPLAIN AST` dump. */
export interface AstNode {
  /** `SelectQuery`, `Function`, `TableIdentifier`, `Literal`, …: the dump's first word. */
  type: string;
  /** What follows the type on its line: a name, a literal, `EXPLAIN PIPELINE`, … */
  text: string;
  alias: string | undefined;
  children: AstNode[];
}

const LINE = /^( *)([A-Za-z][\w:]*)(.*)$/;
const CHILDREN = / \(children (\d+)\)$/;
const ALIAS = / \(alias ([^\s()]+)\)$/;

/**
 * The tree of an `EXPLAIN AST` dump: one node a line, a child indented one space more than its
 * parent. Every count `(children N)` the dump gives must match the lines under it, and a line
 * without one has no children, so a dump that does not read as one consistent tree is refused.
 * Names cannot break a line: docs/sql.md, "What runs".
 */
export function readAst(dump: string): AstNode {
  const lines = dump.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const path: AstNode[] = [];
  const declared = new Map<AstNode, number>();
  let root: AstNode | undefined;
  for (const line of lines) {
    const match = LINE.exec(line);
    if (!match) throw unreadable(`the line '${line}'`);
    const depth = (match[1] ?? '').length;
    let rest = match[3] ?? '';
    const count = CHILDREN.exec(rest);
    if (count) rest = rest.slice(0, count.index);
    const alias = ALIAS.exec(rest);
    if (alias) rest = rest.slice(0, alias.index);
    const node: AstNode = { type: match[2] ?? '', text: rest.startsWith(' ') ? rest.slice(1) : rest, alias: alias?.[1], children: [] };
    declared.set(node, Number(count?.[1] ?? 0));
    if (depth === 0) {
      if (root) throw unreadable('a second statement');
      root = node;
    } else {
      const parent = path[depth - 1];
      if (!parent || depth > path.length) throw unreadable(`the line '${line}' under no parent`);
      parent.children.push(node);
    }
    path.length = depth;
    path.push(node);
  }
  if (!root) throw unreadable('an empty tree');
  for (const [node, count] of declared) {
    if (node.children.length !== count) throw unreadable(`${node.type} with ${node.children.length} children where the dump says ${count}`);
  }
  return root;
}

function unreadable(what: string): SqlError {
  return new SqlError(164, 'READONLY', `Cannot execute query in readonly mode: its parse tree could not be read (${what})`);
}
