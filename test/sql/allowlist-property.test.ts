import fc from 'fast-check';
import t from 'tap';
import { CANARY, sqlFixture } from './backend.ts';

// Random queries made of what hides text from a scanner that is not ClickHouse's own lexer
// (comments of every kind, quotes, heredocs, escapes, case), around what must never run: a file
// written, a connection made, a table operators may not read. Whatever the engine answers, no file
// appears, no connection is made and no answer holds the row of `secret` (docs/sql.md, "What runs").
// SQL_FUZZ_SEED=<n> and SQL_FUZZ_RUNS=<n> change the seed and the number of queries.

const SEED = Number(process.env['SQL_FUZZ_SEED'] ?? 39);
const RUNS = Number(process.env['SQL_FUZZ_RUNS'] ?? 400);

const f = await sqlFixture(t);
const url = `http://127.0.0.1:${f.port}/x.csv`;

const keyword = (word: string): fc.Arbitrary<string> => fc.mixedCase(fc.constant(word));
const hiding = fc.constantFrom('--', '#', '//', '/*', '*/', '/* /*', "'", '"', '`', '$$', '$a$', '\\', "''", "\\'", '""', ';', '\n', '\r\n', '(', ')', ',', '1', '*', '{', '}', ':');
const keywords = fc.oneof(
  ...['SELECT', 'FROM', 'INTO OUTFILE', 'INTO', 'OUTFILE', 'FORMAT CSV', 'DESCRIBE', 'EXPLAIN', 'EXPLAIN AST', 'WITH', 'AS', 'UNION ALL', 'SETTINGS', 'WHERE', 'IN', 'JOIN', 'ON', 'SHOW TABLES', 'SHOW CREATE TABLE', 'INSERT INTO', 'AND STDOUT', 'COMPRESSION', 'TRUNCATE', '* APPLY', 'LIMIT', 'x ->', 'readonly = 0', 'inIgnoreSet'].map(keyword),
);
const targets = fc.constantFrom(
  'secret', 'events', '`secret`', '"secret"', 'default.secret', 'system.users', 'system.one', 'numbers(2)', `file('${f.canaryFile}')`, `file('${f.canaryFile}', 'LineAsString')`,
  `url('${url}', 'CSVWithNames')`, `url('${url}')`, `executable('cat ${f.canaryFile}', 'TSV', 'x String')`, `merge('.*', '.*')`, `'${f.dir}/written.csv'`, "'written-relative.csv'",
  `'${f.dir}/written.csv' FORMAT CSV`, 'output_format_schema', `s3('${url}')`, `remote('127.0.0.1:${f.port}', system.one)`,
);
const piece = fc.oneof({ weight: 4, arbitrary: hiding }, { weight: 3, arbitrary: keywords }, { weight: 3, arbitrary: targets });
const separator = fc.constantFrom(' ', ' ', '\n', '', '\t');
const query = fc.tuple(fc.array(fc.tuple(piece, separator), { minLength: 1, maxLength: 14 }), fc.boolean()).map(([parts, select]) => `${select ? 'SELECT 1 ' : ''}${parts.map(([p, s]) => p + s).join('')}`);

t.test('no query made of comments, quotes, heredocs, escapes and case writes, connects or reads what it may not', async (t) => {
  let answered = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(query, async (sql) => {
      const answer = await f.run(sql);
      if (answer.ok) answered++;
      else refused++;
      const leaked = answer.ok && answer.text.includes(CANARY);
      const written = f.written();
      const connections = f.connections();
      if (leaked || written.length > 0 || connections > 0) {
        throw new Error(`${JSON.stringify(sql)}: ${leaked ? 'read secret' : ''} ${written.join(',')} ${connections} connections`);
      }
    }),
    { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: 200_000 },
  );
  t.ok(refused > 0 && answered > 0, `${RUNS} queries: ${answered} answered, ${refused} refused (seed ${SEED})`);
  t.same(f.written(), [], 'no file was written');
  t.equal(f.connections(), 0, 'no connection was made');
});
