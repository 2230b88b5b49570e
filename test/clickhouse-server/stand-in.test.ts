import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseClientConfigOptions } from '@clickhouse/client';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { startClickHouseStandIn } from './stand-in.ts';

const standIn = await startClickHouseStandIn();
t.teardown(() => standIn.close());

function client(options: ClickHouseClientConfigOptions = {}): ClickHouseClient {
  const ch = createClient({ url: standIn.url, log: { level: ClickHouseLogLevel.OFF }, ...options });
  t.teardown(() => ch.close());
  return ch;
}
const ch = client();

async function rows<T>(query: string, params: Record<string, unknown> = {}, on: ClickHouseClient = ch): Promise<T[]> {
  return (await on.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
}

/** The raw answer to a request, for what the client does not show. */
async function raw(path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: string }> {
  const res = await fetch(`${standIn.url}${path}`, init);
  return { status: res.status, headers: res.headers, body: await res.text() };
}

t.test('ping: GET /ping and GET / answer Ok., and the client pings both ways', async (t) => {
  for (const path of ['/ping', '/']) t.match(await raw(path), { status: 200, body: 'Ok.\n' }, path);
  t.same(await ch.ping(), { success: true });
  t.same(await ch.ping({ select: true }), { success: true });
});

t.test('an exception is a status, X-ClickHouse-Exception-Code and a body the client reads as its ClickHouseError', async (t) => {
  const cases: [string, number, string, number][] = [
    ['SELECT * FROM nowhere', 60, 'UNKNOWN_TABLE', 404],
    ['SELEC 1', 62, 'SYNTAX_ERROR', 400],
    ['SELECT 1; SELECT 2', 62, 'SYNTAX_ERROR', 400],
    ["SELECT toInt32('x')", 6, 'CANNOT_PARSE_TEXT', 400],
    ['SELECT throwIf(1)', 395, 'FUNCTION_THROW_IF_VALUE_IS_NON_ZERO', 500],
  ];
  for (const [query, code, type, status] of cases) {
    const answer = await raw('/', { method: 'POST', body: query });
    t.equal(answer.status, status, `${query}: status`);
    t.equal(answer.headers.get('x-clickhouse-exception-code'), String(code), `${query}: header`);
    t.match(answer.body, new RegExp(`^Code: ${code}\\. DB::Exception: .+\\. \\(${type}\\) \\(version [^)]+\\)\\n$`, 's'), `${query}: body`);
    const err = await ch.command({ query }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof ClickHouseError, `${query}: a ClickHouseError`);
    t.match(err, { code: String(code), type }, `${query}: its code and type`);
  }
  const setting = await ch.query({ query: 'SELECT 1', clickhouse_settings: { no_such_setting: 1 } }).catch((e: unknown) => e);
  t.match(setting, { code: '115', type: 'UNKNOWN_SETTING' }, 'an unknown setting');
  const get = await raw(`/?query=${encodeURIComponent('CREATE TABLE t (a UInt8) ENGINE = Memory')}`);
  t.equal(get.headers.get('x-clickhouse-exception-code'), '164', 'GET is readonly');
});

t.test('query parameters are bound by type from their text, whatever they hold', async (t) => {
  const tricky = "a'b\\c\td\ne -- ; DROP TABLE x";
  const [row] = await rows<Record<string, unknown>>(
    'SELECT {s:String} AS s, {a:Array(String)} AS a, {n:Nullable(UInt8)} AS n, {d:DateTime64(3)} AS d, {m:Map(String, UInt8)} AS m, {t:Identifier} AS ident FROM (SELECT 1 AS x)',
    { s: tricky, a: [tricky, ''], n: null, d: new Date('2026-11-22T10:00:01.234Z'), m: { k: 7 }, t: 'x' },
  );
  t.same(row, { s: tricky, a: [tricky, ''], n: null, d: '2026-11-22 10:00:01.234', m: { k: 7 }, ident: 1 });
  const long = 'x'.repeat(60_000);
  t.same(await rows('SELECT length({v:String}) AS n', { v: long }), [{ n: 60_000 }], 'a URL past 16 KiB');
  await t.rejects(rows('SELECT {missing:String}'), { code: '456' }, 'an unset parameter is refused, not left from another query');
});

t.test('an insert deduplication token drops a repeated block, and lasts for its own insert only', async (t) => {
  await ch.command({ query: 'CREATE TABLE dedup (id String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100' });
  const insert = (ids: string[], token: string) => ch.insert({ table: 'dedup', values: ids.map((id) => ({ id })), format: 'JSONEachRow', clickhouse_settings: { insert_deduplication_token: token } });
  for (let i = 0; i < 3; i++) await insert(['a', 'b'], 'one');
  await insert(['c'], 'two');
  const other = await ch.insert({ table: 'dedup', values: [{ id: 'a' }, { id: 'b' }], format: 'JSONEachRow' });
  t.equal(other.summary?.written_rows, '2', 'X-ClickHouse-Summary counts the rows sent');
  t.same(
    (await rows<{ id: string }>('SELECT id FROM dedup ORDER BY id')).map((r) => r.id),
    ['a', 'a', 'b', 'b', 'c'],
  );
  await ch.insert({ table: 'dedup', values: [], format: 'JSONEachRow' });
});

t.test('settings and the database last for their request', async (t) => {
  const setting = 'SELECT getSetting(\'max_block_size\') AS v';
  const [before] = await rows<{ v: number }>(setting);
  const [during] = await ch.query({ query: setting, format: 'JSONEachRow', clickhouse_settings: { max_block_size: '1234' } }).then((r) => r.json<{ v: number }>());
  t.same(during, { v: 1234 });
  t.same(await rows(setting), [before], 'back to the default');
  await ch.command({ query: 'CREATE TABLE times (at DateTime64(3, \'UTC\')) ENGINE = Memory' });
  const iso = [{ at: '2026-11-22T10:00:01.234Z' }];
  const basic = { date_time_input_format: 'basic', wait_end_of_query: 1 } as const;
  await t.rejects(ch.insert({ table: 'times', values: iso, format: 'JSONEachRow', clickhouse_settings: basic }), { code: '27' }, 'date_time_input_format applies to the insert');
  await ch.insert({ table: 'times', values: iso, format: 'JSONEachRow' });
  t.same(await rows('SELECT at FROM times'), [{ at: '2026-11-22 10:00:01.234' }], 'and to it only');
  await ch.command({ query: 'CREATE DATABASE other' });
  const inOther = client({ url: `${standIn.url}/other` });
  t.same(await rows('SELECT currentDatabase() AS d', {}, inOther), [{ d: 'other' }], 'the URL path names the database');
  t.same(await rows('SELECT currentDatabase() AS d'), [{ d: 'default' }]);
});

t.test('answer headers: query id, format, time zone; gzip both ways', async (t) => {
  const result = await ch.query({ query: 'SELECT 1 AS one', format: 'JSONCompactEachRow', query_id: 'stand-in-q1' });
  t.match(result.response_headers, { 'x-clickhouse-query-id': 'stand-in-q1', 'x-clickhouse-format': 'JSONCompactEachRow', 'x-clickhouse-timezone': /UTC/ });
  t.same(await result.json(), [[1]]);
  const zipped = client({ compression: { request: true, response: true } });
  const answer = await zipped.query({ query: 'SELECT number FROM numbers(3)', format: 'JSONEachRow' });
  t.equal(answer.response_headers['content-encoding'], 'gzip');
  t.same(await answer.json(), [{ number: 0 }, { number: 1 }, { number: 2 }]);
  await zipped.command({ query: 'CREATE TABLE zipped (n UInt8) ENGINE = Memory' });
  await zipped.insert({ table: 'zipped', values: [{ n: 5 }], format: 'JSONEachRow' });
  t.same(await rows('SELECT n FROM zipped'), [{ n: 5 }], 'a gzip request body');
});

t.test('a session keeps its state between requests and runs one query at a time', async (t) => {
  await ch.command({ query: 'CREATE TEMPORARY TABLE kept (n UInt8)', session_id: 's1' });
  await ch.command({ query: 'INSERT INTO kept VALUES (1)', session_id: 's1' });
  t.same((await ch.query({ query: 'SELECT n FROM kept', format: 'JSONEachRow', session_id: 's1' }).then((r) => r.json())), [{ n: 1 }]);
  await t.rejects(ch.query({ query: 'SELECT n FROM kept', session_id: 's2' }), { code: '60' }, 'another session does not see it');
  const slow = ch.command({ query: 'SELECT sleep(2)', session_id: 's1' });
  await new Promise((r) => setTimeout(r, 500));
  await t.rejects(ch.command({ query: 'SELECT 1', session_id: 's1' }), { code: '373', type: 'SESSION_IS_LOCKED' });
  await slow;
  const same = ch.command({ query: 'SELECT sleep(2)', query_id: 'twice' });
  await new Promise((r) => setTimeout(r, 500));
  await t.rejects(ch.command({ query: 'SELECT 1', query_id: 'twice' }), { code: '216' }, 'a query id already running');
  await same;
});

t.test('an idle connection is kept past Node\'s 5 s default, so a client that reuses it late is answered', async (t) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const ping = (): Promise<{ status: number | undefined; reused: boolean }> =>
    new Promise((resolve, reject) => {
      const req = request(`${standIn.url}/ping`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      req.end();
    });
  t.same(await ping(), { status: 200, reused: false }, 'a first request opens the connection');
  await sleep(6000);
  t.same(await ping(), { status: 200, reused: true }, 'six seconds later the same connection answers');
});
