import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { hostEndpoint, openClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { TEST_CLICKHOUSE_URL } from '../clickhouse-server/database.ts';

// What the embedded engine's own read-only mode, and the sandbox of its process, stop, measured
// without the listener's allowlist: the figures of docs/sql.md, "Layers". A change of chDB or of
// the sandbox that moves one fails here, so the docs are read again. The server-mode suite runs this file too; there the server's grants are the
// layer (docs/sql.md, "In front of a ClickHouse server"), so it has nothing to measure.

/** A CSV file served on 127.0.0.1, counting the connections it gets; closed when the test ends. */
async function csvListener(t: Test): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const listener = createServer((_req, res) => {
    connections++;
    res.end('a,b\n1,2\n');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  t.teardown(() => listener.close());
  const address = listener.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/x.csv`, connections: () => connections };
}

t.test("chDB's read-only mode, user_files_path and the working directory, without the allowlist", { skip: TEST_CLICKHOUSE_URL !== undefined && 'the embedded engine only' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sql-layers-'));
  const userFiles = join(dir, 'user_files');
  mkdirSync(userFiles);
  const secretFile = join(dir, 'outside.txt');
  writeFileSync(secretFile, 'outside user_files');
  const { url, connections } = await csvListener(t);
  const relative = `layers-${process.pid}.csv`;
  t.teardown(() => {
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
  t.ok(connections() > 0, `and connects (${connections()} connections)`);
  t.equal(await run(`SELECT 1 INTO OUTFILE '${join(dir, 'absolute.csv')}'`), 'answered', 'INTO OUTFILE is answered');
  t.equal(readFileSync(join(dir, 'absolute.csv'), 'utf8'), '1\n', 'and writes an absolute path');
  t.equal(await run(`SELECT 2 INTO OUTFILE '${relative}'`), 'answered');
  t.ok(existsSync(join(process.cwd(), relative)), "a relative path is written in the process's working directory");
});

t.test("the embedded engine's own process, in its sandbox, reaches no file or server of the host", { skip: TEST_CLICKHOUSE_URL !== undefined && 'the embedded engine only' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sql-sandbox-'));
  const { url, connections } = await csvListener(t);
  const name = `sandbox-${process.pid}.csv`;
  process.env['LAYERS_SECRET'] = 'a secret of the engine';
  t.teardown(() => delete process.env['LAYERS_SECRET']);
  const ch = await openClickHouse({ DATA_DIR: join(dir, 'data'), CLICKHOUSE_SANDBOX: 'required' });
  t.teardown(async () => {
    await ch.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // The engine's own client: it runs whatever it is given, as a query that got past the allowlist would.
  const run = async (query: string): Promise<string> => {
    try {
      const answer = await ch.query({ query, format: 'TabSeparatedRaw' });
      return `answered ${await answer.text()}`.trim();
    } catch (err) {
      return `refused ${(err as Error).message.slice(0, 160)}`;
    }
  };
  const hostFile = join(process.cwd(), name);
  t.match(await run(`SELECT 1 INTO OUTFILE '${hostFile}'`), /^refused .*(Read-only file system|Cannot open file)/, 'INTO OUTFILE cannot write a file of the host');
  t.notOk(existsSync(hostFile), 'and wrote none');
  t.equal(await run(`SELECT 1 INTO OUTFILE '/tmp/${name}'`), 'answered', 'a write to /tmp is answered');
  t.notOk(existsSync(join(tmpdir(), name)), "but lands in the sandbox's own /tmp, not the host's");
  t.equal(await run(`SELECT 2 INTO OUTFILE 'relative-${name}'`), 'answered', 'so does a relative path');
  t.notOk(existsSync(join(process.cwd(), `relative-${name}`)), "not in the engine's working directory");
  t.same(readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.csv')), [], 'nor next to the data');
  // One try each: ClickHouse retries a refused URL with backoff, for half a minute otherwise.
  const once = 'SETTINGS http_max_tries = 1, http_retry_initial_backoff_ms = 1';
  t.match(await run(`DESCRIBE url('${url}', 'CSVWithNames') ${once}`), /^refused/, 'url() reaches no server');
  t.match(await run(`SELECT * FROM url('http://1.1.1.1/', 'LineAsString', 'a String') ${once}`), /^refused/, 'not even a public one');
  t.equal(connections(), 0, 'the listener on the host got no connection');
  t.match(await run("SELECT length(file('/etc/hostname')) > 0"), /^answered 1/, 'a file of the host everyone may read can still be read');
  const environ = await run("SELECT file('/proc/self/environ')");
  t.notMatch(environ, /LAYERS_SECRET|a secret of the engine/, "the engine's environment is not the sandbox's");
  t.notMatch(environ, new RegExp(hostEndpoint(ch)?.password ?? 'none'), 'nor is the password');
  t.match(await run(`SELECT file('/proc/${process.pid}/environ')`), /^refused/, "the engine's process is not there to read");
  t.match(await run("SELECT arrayFilter(l -> l LIKE 'CapEff%', splitByChar('\\n', file('/proc/self/status')))"), /CapEff:\\t0{16}/, 'and it has no capabilities');
});
