import t from 'tap';
import { readAst } from '../../gateway/sql/ast.ts';
import { FunctionCatalog, type FunctionRow } from '../../gateway/sql/catalog.ts';
import { SqlError } from '../../gateway/sql/errors.ts';

function refusal(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    return err instanceof SqlError ? `${err.code} ${err.message}` : String(err);
  }
}

t.test('an EXPLAIN AST dump reads as one tree whose counts agree', async (t) => {
  const dump = [
    'SelectWithUnionQuery (children 2)',
    ' ExpressionList (children 1)',
    '  SelectQuery (children 2)',
    '   ExpressionList (children 1)',
    '    Function count (alias n) (children 1)',
    '     ExpressionList',
    '   TablesInSelectQuery (children 1)',
    '    TablesInSelectQueryElement (children 1)',
    '     TableExpression (children 1)',
    '      TableIdentifier default.events (alias e)',
    ' Identifier CSV',
    '',
  ].join('\n');
  const root = readAst(dump);
  t.equal(root.type, 'SelectWithUnionQuery');
  t.equal(root.children.length, 2);
  const fn = root.children[0]?.children[0]?.children[0]?.children[0];
  t.match(fn, { type: 'Function', text: 'count', alias: 'n' }, 'a name and its alias');
  const table = root.children[0]?.children[0]?.children[1]?.children[0]?.children[0]?.children[0];
  t.match(table, { type: 'TableIdentifier', text: 'default.events', alias: 'e' });
  t.match(readAst('ShowCreateTableQuery  t (children 1)\n Identifier t\n'), { type: 'ShowCreateTableQuery', text: ' t' }, 'the text keeps what follows the kind');
  t.match(readAst('Explain EXPLAIN QUERY TREE (children 1)\n SelectWithUnionQuery\n'), { type: 'Explain', text: 'EXPLAIN QUERY TREE' });
});

t.test('a dump that does not read as one consistent tree is refused', async (t) => {
  const broken: [string, string][] = [
    ['SelectWithUnionQuery (children 1)\n ExpressionList\nIdentifier x\n', 'a second statement'],
    ['SelectWithUnionQuery (children 2)\n ExpressionList\n', 'fewer children than counted'],
    ['SelectWithUnionQuery (children 1)\n ExpressionList\n Identifier CSV\n', 'more children than counted'],
    ['SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n   Literal UInt64_1\n', 'a line two levels deeper'],
    ['Identifier x\n  Function file (children 0)\n', 'a child under a line without a count'],
    ['SelectWithUnionQuery\n\t Literal 1\n', 'a line of no node'],
    ['', 'an empty dump'],
  ];
  for (const [dump, what] of broken) t.match(refusal(() => readAst(dump)), /^164 .*parse tree could not be read/, what);
});

t.test('the function catalog allows by category, resolves aliases, case and combinators', async (t) => {
  const rows: FunctionRow[] = [
    ['sum', 1, 1, '', 'Aggregate Functions'],
    ['uniqExact', 1, 0, '', 'Aggregate Functions'],
    ['stochasticLinearRegression', 1, 0, '', 'Machine Learning'],
    ['plus', 0, 0, '', 'Arithmetic'],
    ['lower', 0, 1, '', 'String'],
    ['lcase', 0, 1, 'lower', ''],
    ['file', 0, 0, '', 'Other'],
    ['toTypeName', 0, 0, '', 'Other'],
    ['dictGet', 0, 0, '', 'Dictionary'],
    ['newThing', 0, 0, '', ''],
    ['fileAlias', 0, 0, 'file', ''],
  ];
  const catalog = new FunctionCatalog(rows, ['If', 'OrNull', 'Null', 'State', 'Merge']);
  const allowed = ['sum', 'SUM', 'uniqExact', 'uniqExactIf', 'sumIfOrNull', 'sumStateMerge', 'plus', 'lower', 'LOWER', 'LCASE', 'toTypeName', 'lambda', 'exists'];
  const refused = ['Plus', 'file', 'FILE', 'fileAlias', 'dictGet', 'newThing', 'stochasticLinearRegression', 'stochasticLinearRegressionIf', 'fileIf', 'If', 'plusIf', 'unknown', 'uniqexact'];
  for (const name of allowed) t.ok(catalog.allows(name), `${name} is allowed`);
  for (const name of refused) t.notOk(catalog.allows(name), `${name} is refused`);
});
