import t from 'tap';
import { SqlError } from '../../engine/sql/errors.ts';
import { querySettings } from '../../engine/sql/limits.ts';
import { checkStatement } from '../../engine/sql/statement.ts';

const limits = { max_execution_time: 30, max_memory_usage: 1000, max_rows_to_read: 1000, max_result_rows: 100, max_result_bytes: 1000 };

function refusal(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (err) {
    return err instanceof SqlError ? `${err.code} ${err.type}` : String(err);
  }
}

t.test('checkStatement lets one read through and refuses what read-only mode does not', async (t) => {
  const allowed = [
    'SELECT 1',
    'SELECT 1;',
    'SELECT 1; -- trailing comment',
    "SELECT 'a; DROP TABLE x', 'INTO OUTFILE', 'file(1)'",
    'SELECT `a;b`, "file" AS f FROM t',
    "SELECT profile('x'), my_file(1), t.file FROM t",
    '/* KILL QUERY */ SELECT 1',
    'SHOW TABLES',
    'EXPLAIN SELECT 1',
  ];
  for (const sql of allowed) t.equal(refusal(() => checkStatement(sql)), undefined, sql);
  const refused: [string, string][] = [
    ['SELECT 1; SELECT 2', '62 SYNTAX_ERROR'],
    ["SELECT 1 INTO   OUTFILE 'x'", '358 INTO_OUTFILE_NOT_ALLOWED'],
    ['kill query where 1', '164 READONLY'],
    ["BACKUP TABLE t TO Disk('d', 'b')", '164 READONLY'],
    ["RESTORE TABLE t FROM Disk('d', 'b')", '164 READONLY'],
    ["SELECT file('/etc/passwd')", '164 READONLY'],
    ["SELECT `file` /* */ ('/etc/passwd')", '164 READONLY'],
    ['SELECT "file"(\'/etc/passwd\')', '164 READONLY'],
  ];
  for (const [sql, error] of refused) t.equal(refusal(() => checkStatement(sql)), error, sql);
});

t.test('querySettings: the limits, lowered where asked, output settings, readonly last', async (t) => {
  t.same(querySettings([['max_execution_time', '5'], ['output_format_json_quote_64bit_integers', '0'], ['wait_end_of_query', '1'], ['readonly', '1']], limits), [
    ['max_execution_time', '5'],
    ['max_memory_usage', '1000'],
    ['max_rows_to_read', '1000'],
    ['max_result_rows', '100'],
    ['max_result_bytes', '1000'],
    ['output_format_json_quote_64bit_integers', '0'],
    ['readonly', '1'],
  ]);
  t.equal(refusal(() => querySettings([['max_result_rows', '101']], limits)), '452 SETTING_CONSTRAINT_VIOLATION', 'a limit raised');
  t.equal(refusal(() => querySettings([['max_result_rows', '0']], limits)), '452 SETTING_CONSTRAINT_VIOLATION', '0, no limit');
  t.equal(refusal(() => querySettings([['max_result_rows', '1e9']], limits)), '452 SETTING_CONSTRAINT_VIOLATION', 'not a whole number');
  t.equal(refusal(() => querySettings([['readonly', '0']], limits)), '164 READONLY', 'readonly lifted');
  t.equal(refusal(() => querySettings([['allow_ddl', '1']], limits)), '164 READONLY', 'any other setting');
});
