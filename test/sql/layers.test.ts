import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { TEST_CLICKHOUSE_URL } from '../clickhouse-server/database.ts';

// What the embedded engine's own read-only mode stops, measured without the listener's allowlist:
// the figures of docs/sql.md, "Layers". A change of chDB that moves one fails here, so the docs
// are read again. The server-mode suite runs this file too; there the server's grants are the
// layer (docs/sql.md, "In front of a ClickHouse server"), so it has nothing to measure.

t.test("chDB's read-only mode, user_files_path and the working directory, without the allowlist", { skip: TEST_CLICKHOUSE_URL !== undefined && 'the embedded engine only' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sql-layers-'));
  const userFiles = join(dir, 'user_files');
  mkdirSync(userFiles);
  const secretFile = join(dir, 'outside.txt');
  writeFileSync(secretFile, 'outside user_files');
  let connections = 0;
  const listener = createServer((_req, res) => {
    connections++;
    res.end('a,b\n1,2\n');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/x.csv`;
  const relative = `layers-${process.pid}.csv`;
  t.teardown(() => {
    listener.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(relative, { force: true });
  });

  const { Session } = await import('chdb');
  const session = new Session(join(dir, 'clickhouse'), { connectionArgs: [`--user_files_path=${userFiles}`] });
  t.teardown(() => session.close());
  await session.queryAsync('SET readonly = 1');
  const run = async (sql: string): Promise<string> => {
    try {
      return `answered ${(await session.queryAsync(sql, { format: 'TSVRaw' })).text()}`.trim();
    } catch (err) {
      return `refused ${/\((\w+)\)\s*$/.exec((err as Error).message)?.[1] ?? (err as Error).message}`;
    }
  };

  t.equal(await run(`SELECT * FROM file('${secretFile}', 'LineAsString')`), 'refused READONLY', 'the table function file() is refused');
  t.equal(await run(`SELECT * FROM url('${url}', 'CSVWithNames')`), 'refused READONLY', 'so is url() in a SELECT');
  t.equal(await run("SELECT * FROM executable('true', 'TSV', 'x String')"), 'refused READONLY', 'and executable()');
  t.equal(await run('CREATE TABLE x (a UInt8) ENGINE = Memory'), 'refused READONLY', 'and DDL');

  t.equal(await run("SELECT getSetting('readonly') SETTINGS readonly = 0"), 'refused READONLY', 'a SETTINGS clause may not lift read-only mode');
  t.equal(await run("SELECT (SELECT getSetting('readonly') SETTINGS readonly = 0)"), 'answered 0', "but a subquery's SETTINGS clause lifts it for the subquery");
  t.equal(await run(`SELECT (SELECT count() FROM file('${secretFile}', 'LineAsString') SETTINGS readonly = 0)`), 'answered 1', 'which then reads through file()');
  t.equal(await run(`SELECT file('${secretFile}')`), 'answered outside user_files', 'the function file() reads a file outside user_files_path');
  t.match(await run(`DESCRIBE url('${url}', 'CSVWithNames')`), /^answered a\tNullable/, 'DESCRIBE url() infers a schema over the network');
  t.ok(connections > 0, `and connects (${connections} connections)`);
  t.equal(await run(`SELECT 1 INTO OUTFILE '${join(dir, 'absolute.csv')}'`), 'answered', 'INTO OUTFILE is answered');
  t.equal(readFileSync(join(dir, 'absolute.csv'), 'utf8'), '1\n', 'and writes an absolute path');
  t.equal(await run(`SELECT 2 INTO OUTFILE '${relative}'`), 'answered');
  t.ok(existsSync(join(process.cwd(), relative)), "a relative path is written in the process's working directory");
});
