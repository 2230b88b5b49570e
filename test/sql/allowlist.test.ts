import t from 'tap';
import { SYSTEM_TABLES, TABLE_FUNCTIONS } from '../../gateway/sql/allowlist.ts';
import { CANARY, sqlFixture } from './backend.ts';

// One fixture for the file: the embedded engine binds one data directory per process.
const f = await sqlFixture(t);

// What the engine's parser decides an operator's query may be (docs/sql.md, "What runs"), on the
// embedded engine and, in the server-mode suite, on a ClickHouse server: every refusal leaves no
// file, no connection and no row of a table operators may not read.

t.test('the queries that wrote files, ran two statements or reached the network are refused', async (t) => {
  const url = `http://127.0.0.1:${f.port}/x.csv`;
  const cases: [string, string, number][] = [
    ['a // comment hides INTO OUTFILE from a second lexer', `SELECT 1 // '\nINTO OUTFILE '${f.dir}/a.csv' FORMAT CSV -- '`, 164],
    ['a nested comment', `SELECT 1 /* /* */ ' */ INTO OUTFILE '${f.dir}/b.csv' FORMAT CSV -- '`, 164],
    ['a heredoc', `SELECT $$'$$ INTO OUTFILE '${f.dir}/c.csv' FORMAT CSV -- '`, 164],
    ['a relative path', "SELECT 1 INTO OUTFILE 'written-relative.csv'", 164],
    ['INTO OUTFILE with compression', `SELECT 1 INTO OUTFILE '${f.dir}/d.csv.gz' COMPRESSION 'gzip'`, 164],
    ['DESCRIBE url()', `DESCRIBE url('${url}', 'CSVWithNames')`, 164],
    ['DESCRIBE TABLE of a subquery over url()', `DESCRIBE TABLE (SELECT * FROM url('${url}', 'CSVWithNames'))`, 164],
    ['EXPLAIN of url()', `EXPLAIN SELECT * FROM url('${url}', 'CSVWithNames')`, 164],
    ['two statements behind a // comment', "SELECT 1 // '\n; SELECT 2 -- '", 62],
    ['two statements', 'SELECT 1; SELECT 2', 62],
  ];
  for (const [what, sql, code] of cases) {
    const answer = await f.run(sql);
    t.equal(answer.ok ? 'answered' : answer.code, code, `${what}: ${answer.ok ? answer.text : answer.error}`);
  }
  const outputSchema = await f.run('SELECT 1', [['output_format_schema', `${f.dir}/schema.capnp`]]);
  t.equal(outputSchema.ok ? 'answered' : outputSchema.code, 164, 'output_format_schema, a setting that names a path to write');
  for (const [name, value] of [['format_schema', `${f.dir}/x.proto:M`], ['format_template_resultset', f.canaryFile], ['format_avro_schema_registry_url', url], ['user_files_path', f.dir]]) {
    const answer = await f.run('SELECT 1', [[name ?? '', value ?? '']]);
    t.equal(answer.ok ? 'answered' : answer.code, 164, `the setting ${name} is refused`);
  }
  t.same(f.written(), [], 'no file was written');
  t.equal(f.connections(), 0, 'no connection was made');
});

t.test('every table function the engine has, but the few that make rows of their arguments, is refused', async (t) => {
  const listed = await f.run('SELECT name FROM system.table_functions', [], []);
  t.equal(listed.ok ? 'answered' : listed.code, 164, 'system.table_functions itself is not for operators');
  const names = (await f.admin('SELECT name FROM system.table_functions ORDER BY name')).trim().split('\n');
  t.ok(names.length > 50, `the engine names ${names.length} table functions`);
  const args = `('http://127.0.0.1:${f.port}/x.csv', 'CSVWithNames')`;
  for (const name of names.filter((n) => !TABLE_FUNCTIONS.has(n.toLowerCase()))) {
    for (const sql of [`SELECT * FROM ${name}${args}`, `DESCRIBE ${name}${args}`, `SELECT * FROM numbers(1) AS a JOIN (SELECT * FROM ${name.toUpperCase()}${args}) AS b ON 1`]) {
      const answer = await f.run(sql);
      // view() and its kin take a subquery: the parser refuses these arguments first (code 62).
      if (answer.ok || (answer.code !== 164 && !(answer.code === 62 && /^view/i.test(name)))) t.fail(`${sql}: ${answer.ok ? answer.text : answer.error}`);
    }
  }
  t.pass(`${names.length - TABLE_FUNCTIONS.size} table functions refused in SELECT, DESCRIBE and a joined subquery`);
  for (const sql of ['SELECT count() FROM numbers(10)', 'SELECT count() FROM numbers_mt(10)', 'SELECT count() FROM generate_series(1, 10)', "SELECT count() FROM values('x UInt8', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)"]) {
    const answer = await f.run(sql);
    t.same(answer, { ok: true, text: '10\n' }, sql);
  }
  t.equal(f.connections(), 0, 'no connection was made');
  t.same(f.written(), [], 'no file was written');
});

t.test('only the engine tables and a few of system are read', async (t) => {
  const refused = [
    'SELECT * FROM secret',
    `SELECT * FROM ${f.database}.secret`,
    'SELECT * FROM `secret`',
    'SELECT * FROM "secret"',
    'SELECT * FROM events WHERE external_id IN secret',
    'SELECT * FROM events WHERE external_id GLOBAL NOT IN secret',
    'SELECT * FROM events AS e JOIN secret AS s ON e.project = s.project',
    'SELECT (SELECT any(external_id) FROM secret)',
    'WITH x AS (SELECT * FROM secret) SELECT * FROM x',
    'WITH secret AS (SELECT 1 AS n) SELECT n FROM secret',
    'SELECT * FROM events UNION ALL SELECT * FROM secret',
    'EXPLAIN SYNTAX SELECT * FROM secret',
    'DESCRIBE secret',
    'SHOW CREATE TABLE secret',
    `SHOW CREATE TABLE ${f.database}.secret`,
    "SELECT * FROM merge('.*', '.*')",
    'SELECT * FROM system.users',
    'SELECT * FROM system.query_log',
    'SELECT * FROM system.tables',
    'SHOW TABLES FROM system',
    'SELECT * FROM information_schema.tables',
    "SELECT joinGet('secret', 'external_id', 'p')",
    "SELECT dictGet('secret', 'external_id', 1)",
    "SELECT hasColumnInTable('default', 'secret', 'external_id')",
    `SELECT file('${f.canaryFile}')`,
    "SELECT getServerSetting('path')",
    `SELECT * APPLY(file) FROM (SELECT '${f.canaryFile}' AS p)`,
    "SELECT * APPLY(x -> (SELECT arrayStringConcat(groupArray(external_id), ',') FROM secret)) FROM system.one",
    "SELECT COLUMNS('.*') APPLY(toString) FROM events",
    'SHOW TABLES LIMIT (SELECT toUInt64(any(external_id)) FROM secret)',
    "SHOW TABLES WHERE (SELECT any(external_id) FROM secret) = 'x'",
    'SHOW TABLES',
    'SHOW SETTINGS LIKE \'%path%\'',
    'SHOW CHANGED SETTINGS',
    'SHOW DATABASES',
    "WITH secret AS t SELECT ('p', 'u1', 'sent', toDateTime64('2026-01-01 00:00:00', 3, 'UTC')) IN t",
    'SELECT inIgnoreSet(1, system.tables)',
    "SELECT inIgnoreSet(('p', 'u1'), secret)",
    'SELECT notInIgnoreSet(1, secret)',
    'SELECT (SELECT getSetting(\'readonly\') SETTINGS readonly = 0)',
    `SELECT (SELECT count() FROM url('http://127.0.0.1:${f.port}/', 'LineAsString', 'a String') SETTINGS readonly = 0)`,
    "SELECT * FROM '/etc/passwd'",
    "SELECT 1 FROM system.one AS a JOIN '/etc/hostname' AS b ON 1",
    "DESCRIBE '/etc/hostname'",
    "SELECT * FROM 'secret'",
    "SELECT * FROM 'etc?passwd'",
    "SELECT 1 FROM 'a\n       Identifier zzz'",
    'SELECT * FROM {t:Identifier}',
    'SELECT * FROM { t : identifier }',
    'SELECT {t:Array(Identifier)}',
    'SELECT `x.y` FROM events',
    'SELECT 1 AS `a b`',
    'SELECT 1 AS `a\\nb`',
    'SELECT 1 AS "a(b)"',
    'SELECT 1 SETTINGS max_threads = 1',
    'SHOW PROCESSLIST',
    'KILL QUERY WHERE 1',
    'SYSTEM FLUSH LOGS',
    'INSERT INTO events VALUES (1)',
    'EXPLAIN TABLE OVERRIDE SELECT 1',
    'EXISTS TABLE secret',
    'SET readonly = 0',
    'USE system',
  ];
  for (const sql of refused) {
    const answer = await f.run(sql, [], [['t', 'secret']]);
    t.match(answer, { ok: false }, `${sql}: ${answer.ok ? answer.text : answer.error}`);
    if (!answer.ok && answer.error.includes(CANARY)) t.fail(`${sql}: the refusal carries the row of secret`);
  }
  t.equal(f.connections(), 0, 'no connection was made');
  t.same(f.written(), [], 'no file was written');
  const allowed: [string, string][] = [
    ['SELECT external_id FROM events', 'u1\n'],
    [`SELECT external_id FROM ${f.database}.events`, 'u1\n'],
    ['SELECT count() FROM message_deliveries AS d JOIN receipts AS r ON d.project = r.project', '1\n'],
    ['WITH cte AS (SELECT 1 AS n) SELECT n FROM cte', '1\n'],
    ['SELECT countIf(status = \'sent\'), uniqExactIf(external_id, 1), sumOrNull(1), COUNT(), Sum(2) FROM users', '1\t1\t1\t1\t2\n'],
    ["SELECT * FROM (SELECT external_id FROM events WHERE external_id IN (SELECT external_id FROM users) UNION ALL SELECT 'x') ORDER BY 1", 'u1\nx\n'],
    ['SELECT number FROM system.numbers LIMIT 2', '0\n1\n'],
    ['SELECT dummy FROM system.one', '0\n'],
    ['SELECT count() FROM users WHERE (project, external_id, status, at) IN events', '1\n'],
    ["SELECT {p:String}, toTypeName({n:UInt8})", 'x\tUInt8\n'],
    ['SELECT 1 AS `ok-name`, 2 AS "_$x"', '1\t2\n'],
    ["SELECT getSetting('readonly')", '1\n'],
    ['EXPLAIN AST SELECT 1', 'SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Literal UInt64_1\n'],
    ['DESCRIBE (SELECT 1 AS n)', 'n\tUInt8\t\t\t\t\t\n'],
    ['SELECT external_id FROM events FORMAT CSV', '"u1"\n'],
  ];
  for (const [sql, text] of allowed) {
    const answer = await f.run(sql, [], [['p', 'x'], ['n', '3']]);
    t.same(answer, { ok: true, text }, sql);
  }
  const created = await f.run('SHOW CREATE TABLE events');
  t.match(created, { ok: true, text: /CREATE TABLE/ }, 'SHOW CREATE TABLE of an engine table');
  t.equal([...SYSTEM_TABLES].length, 5);
});

t.test('a quoted name, a literal or a comment cannot hide a statement, a clause or a call', async (t) => {
  const quoted = await f.run("SELECT 'file(x); DROP', 'INTO OUTFILE' AS `a-b` -- ; file(\n");
  t.same(quoted, { ok: true, text: 'file(x); DROP\tINTO OUTFILE\n' });
  const heredoc = await f.run('SELECT $tag$ \'; SELECT * FROM secret -- $tag$');
  t.same(heredoc, { ok: true, text: " \\'; SELECT * FROM secret -- \n" }, 'a heredoc is a string, written as TSV writes one');
  t.notOk(JSON.stringify([quoted, heredoc]).includes(CANARY));
});
