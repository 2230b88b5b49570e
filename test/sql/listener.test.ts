import { createClient } from '@clickhouse/client';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runEngine } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import { sqlCall, sqlEngine } from './engine.ts';

const outfile = join(tmpdir(), `sql-outfile-${process.pid}.txt`);
const COUNTS = 'SELECT status, count() AS n FROM message_deliveries WHERE project = {project:String} GROUP BY status ORDER BY status';

t.test('the SQL listener answers operator keys as ClickHouse does, and refuses everything else', async (t) => {
  const s = await sqlEngine(t);
  const project = s.d.project.project_id;
  await s.addOutcomes([
    ...Array.from({ length: 5 }, (_, i) => s.outcome(i)),
    ...Array.from({ length: 3 }, (_, i) => s.outcome(10 + i, { status: 'failed', error_code: 'invalid_token', hint: 'x', provider_message_id: null })),
  ]);
  const key = { 'X-ClickHouse-Key': s.operatorKey };

  const ping = await sqlCall(s.sqlUrl.replace(/\/?$/, '/ping'), {});
  t.equal(ping.text, 'Ok.\n', 'GET /ping answers Ok. without a key');

  const client = createClient({ url: s.sqlUrl, username: 'anyone', password: s.operatorKey });
  t.teardown(() => client.close());
  const rows = await eventually('the recorded outcomes', async () => {
    const result = await client.query({ query: COUNTS, query_params: { project }, format: 'JSONEachRow' });
    const got = await result.json<{ status: string; n: string }>();
    return got.length === 2 && got.every((r) => Number(r.n) > 0) && got.reduce((a, r) => a + Number(r.n), 0) === 8 ? got : undefined;
  });
  t.same(rows, [{ status: 'failed', n: '3' }, { status: 'sent', n: '5' }], '@clickhouse/client with the key as its password reads counts by status, bound from query parameters');

  const csv = await sqlCall(s.sqlUrl, { query: `SELECT status, count() FROM message_deliveries WHERE project = {p:String} GROUP BY status ORDER BY status FORMAT CSV`, param_p: project }, { headers: key });
  t.equal(csv.status, 200);
  t.equal(csv.text, '"failed",3\n"sent",5\n', 'a GET with FORMAT CSV answers CSV, written by the engine');
  t.equal(csv.headers.get('x-clickhouse-format'), 'CSV');
  t.ok(csv.headers.get('x-clickhouse-query-id'), 'a query id is answered');
  t.ok(JSON.parse(csv.headers.get('x-clickhouse-summary') ?? 'null'), 'a summary is answered');

  const bearer = await sqlCall(s.sqlUrl, { query: 'SELECT 1', default_format: 'JSONCompact', query_id: 'q-1' }, { headers: { Authorization: `Bearer ${s.operatorKey}` } });
  t.equal(bearer.status, 200, 'the key as a bearer token');
  t.equal(bearer.headers.get('x-clickhouse-query-id'), 'q-1', 'the query id asked for');
  t.equal(bearer.headers.get('x-clickhouse-format'), 'JSONCompact', 'default_format applies');
  t.same((JSON.parse(bearer.text) as { data: unknown }).data, [[1]]);

  const database = s.env['CLICKHOUSE_URL'] === undefined ? 'default' : new URL(s.env['CLICKHOUSE_URL']).pathname.slice(1);
  const posted = await sqlCall(s.sqlUrl, { database }, { body: `SELECT count() FROM message_deliveries WHERE project = '${project}'`, headers: key });
  t.equal(posted.text, '8\n', "a POST carries the query in its body; the engine's database may be named; TSV by default");
  const elsewhere = await sqlCall(s.sqlUrl, { database: 'system' }, { body: 'SELECT count() FROM one', headers: key });
  t.equal(elsewhere.headers.get('x-clickhouse-exception-code'), '164', 'another database is refused');

  const refusals: [string, Record<string, string>][] = [
    ['no key', {}],
    ['a REST key', { Authorization: `Bearer ${s.d.project.rest_key}` }],
    ['an SDK key', { 'X-ClickHouse-Key': s.d.project.sdk_key }],
    ['a wrong key', { Authorization: `Basic ${Buffer.from('default:operator_wrong').toString('base64')}` }],
  ];
  for (const [what, headers] of refusals) {
    const refused = await sqlCall(s.sqlUrl, { query: 'SELECT 1' }, { headers });
    t.equal(refused.status, 401, `${what} is refused`);
    t.match(refused.headers.get('x-clickhouse-exception-code'), /^(194|516)$/, `${what}: ClickHouse's code`);
    t.match(refused.text, /^Code: \d+\. DB::Exception: /, `${what}: ClickHouse's error text`);
  }
  t.ok(s.engine.logs.some((l) => l['msg'] === 'sql key refused' && l['reason'] === 'not a live operator key'), 'a failure is logged');

  const forbidden: [string, string, RegExp][] = [
    ['DROP TABLE', 'DROP TABLE message_deliveries', /READONLY/],
    ['INSERT', `INSERT INTO message_deliveries (id, project) VALUES ('x', '${project}')`, /READONLY/],
    ['SET readonly = 0', 'SET readonly = 0', /READONLY/],
    ['a SETTINGS clause that lifts a limit', 'SELECT 1 SETTINGS max_execution_time = 3600', /READONLY/],
    ['url()', "SELECT * FROM url('http://127.0.0.1:1/', 'CSV', 'a String')", /READONLY/],
    ['file()', "SELECT * FROM file('/etc/passwd', 'LineAsString')", /READONLY/],
    ['two statements', 'SELECT 1; DROP TABLE message_deliveries', /Multi-statements are not allowed/],
    ['INTO OUTFILE', `SELECT 1 INTO OUTFILE '${outfile}'`, /INTO OUTFILE is not allowed.*READONLY/],
    ['the function file()', "SELECT /* */ `file`('/etc/hostname')", /READONLY/],
    ['KILL QUERY', 'KILL QUERY WHERE 1', /READONLY/],
    ['BACKUP', "BACKUP TABLE message_deliveries TO Disk('default', 'b')", /READONLY/],
    ['SYSTEM', 'SYSTEM FLUSH LOGS', /READONLY/],
  ];
  for (const [what, query, error] of forbidden) {
    const refused = await sqlCall(s.sqlUrl, {}, { body: query, headers: key });
    t.not(refused.status, 200, `${what} is refused`);
    t.ok(refused.headers.get('x-clickhouse-exception-code'), `${what}: an exception code`);
    t.match(refused.text, error, `${what}: ${refused.text.trim()}`);
  }
  t.notOk(existsSync(outfile), 'no file was written');
  const quoted = await sqlCall(s.sqlUrl, {}, { body: "SELECT 'file(x); DROP' AS `a-b` -- ; file(\n", headers: key });
  t.equal(quoted.text, 'file(x); DROP\n', 'literals, quoted names and comments are not taken for statements or calls');
  const raised = await sqlCall(s.sqlUrl, { query: 'SELECT 1', max_execution_time: '3600' }, { headers: key });
  t.equal(raised.headers.get('x-clickhouse-exception-code'), '452', 'a limit raised by a setting is refused');
  const lowered = await sqlCall(s.sqlUrl, { query: "SELECT getSetting('max_execution_time'), getSetting('readonly')", max_execution_time: '7' }, { headers: key });
  t.equal(lowered.text, '7\t1\n', 'a limit lowered by a setting applies, read-only');
  const other = await sqlCall(s.sqlUrl, { query: 'SELECT 1', max_threads: '64' }, { headers: key });
  t.equal(other.headers.get('x-clickhouse-exception-code'), '164', 'any other setting is refused as in readonly mode');

  const after = await client.query({ query: COUNTS, query_params: { project }, format: 'JSONEachRow' });
  t.same(await after.json(), rows, 'the tables are intact');

  const publicPort = await fetch(`${s.engine.url}/?query=${encodeURIComponent('SELECT 1')}`, { headers: key });
  t.equal(publicPort.status, 404, 'the public port serves no SQL');
  const publicPost = await fetch(`${s.engine.url}/`, { method: 'POST', body: 'SELECT 1', headers: key });
  t.not(publicPost.status, 200, 'nor a POST of SQL');
  t.notMatch(await publicPost.text(), /^1\n$/);
  const publicApi = await fetch(`${s.engine.url}/api/deliveries`, { headers: { Authorization: `Bearer ${s.operatorKey}` } });
  t.equal(publicApi.status, 401, 'the public API refuses an operator key');

  const revoked = await runEngine(['keys', 'revoke', s.operatorKey], s.d.env);
  t.equal(revoked.code, 0, revoked.stderr);
  await eventually('the revocation', async () => ((await sqlCall(s.sqlUrl, { query: 'SELECT 1' }, { headers: key })).status === 401 ? true : undefined));
  t.pass('a revoked operator key is refused within KEY_CACHE_MS');

  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) statuses.push((await sqlCall(s.sqlUrl, { query: 'SELECT 1' }, { headers: { 'X-ClickHouse-Key': `operator_guess${i}` } })).status);
  t.ok(statuses.includes(429), `failed keys from one address are limited: ${statuses.join(' ')}`);
  const limited = await sqlCall(s.sqlUrl, { query: 'SELECT 1' }, { headers: { 'X-ClickHouse-Key': 'operator_one_more' } });
  t.equal(limited.status, 429, 'the address is refused before its key is looked at');
  t.equal(limited.headers.get('x-clickhouse-exception-code'), '516');
  t.ok(limited.headers.get('retry-after'), 'with Retry-After');
});
