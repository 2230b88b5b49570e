import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { Redis } from 'ioredis';
import t from 'tap';
import WebSocket from 'ws';
import type { GatewayDeps } from '../../gateway/server/deps.ts';
import { classify } from '../../engine/infra/process/failure.ts';
import { socketRoute } from '../../gateway/server/route.ts';
import { routes } from '../../gateway/routes/table.ts';
import { sdkSocket } from '../../gateway/routes/sdk-ws.ts';
import { SdkSocketChannel } from '../../gateway/ws/sdk-channel.ts';
import { CallerError, UnavailableError } from '../../schemas/errors.ts';
import { call } from '../helpers/http.ts';
import { captureStderr, gatewayWith } from '../helpers/gateway-app.ts';

/** An error shaped like one a library throws: its class name and fields. */
function libraryError(name: string, message: string, fields: Record<string, unknown> = {}): Error {
  const err = Object.assign(new Error(message), fields);
  Object.defineProperty(err, 'name', { value: name });
  return err;
}

t.test('classify: only what says a dependency is unreachable or slow is unavailable; anything unknown is a bug', async (t) => {
  const unavailable: [string, unknown][] = [
    ['UnavailableError', new UnavailableError('spill journal full')],
    ['an error carrying retryAfter (the ingest writer)', Object.assign(new Error('neither Redis nor the journal'), { retryAfter: 1 })],
    ['socket refused', libraryError('Error', 'connect ECONNREFUSED 127.0.0.1:9', { code: 'ECONNREFUSED' })],
    ['socket reset', libraryError('Error', 'socket hang up', { code: 'ECONNRESET' })],
    ['ioredis command timeout', new Error('Command timed out')],
    ['ioredis closed connection', new Error('Connection is closed.')],
    ['ioredis without offline queue', new Error("Stream isn't writeable and enableOfflineQueue options is false")],
    ['ioredis retries exhausted', libraryError('MaxRetriesPerRequestError', 'Reached the max retries per request limit (which is 1).')],
    ['ioredis cluster down', libraryError('ClusterAllFailedError', 'Failed to refresh slots cache.')],
    ['Redis loading its data', libraryError('ReplyError', 'LOADING Redis is loading the dataset in memory')],
    ['Redis cluster reconfiguring', libraryError('ReplyError', 'CLUSTERDOWN The cluster is down')],
    ['ClickHouse client timeout', new Error('Timeout error.')],
    ['ClickHouse query too slow', libraryError('ClickHouseError', 'Timeout exceeded: elapsed 30 s', { code: '159', type: 'TIMEOUT_EXCEEDED' })],
    ['an abort signal timeout', libraryError('TimeoutError', 'The operation was aborted due to timeout')],
    ["the embedded engine's process gone with its socket", libraryError('Error', 'connect ENOENT /data/clickhouse-host/socket', { code: 'ENOENT', syscall: 'connect' })],
    ["the embedded engine's process refusing, as a cause", new Error('query failed', { cause: libraryError('Error', 'connect ECONNREFUSED /data/clickhouse-host/socket', { code: 'ECONNREFUSED' }) })],
  ];
  for (const [what, err] of unavailable) t.match(classify(err), { kind: 'unavailable', retryAfter: 1 }, what);
  t.same(classify(new UnavailableError('later', 7)), { kind: 'unavailable', retryAfter: 7 }, 'retryAfter is kept');

  const bugs: [string, unknown][] = [
    ['a plain Error', new Error('boom')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a thrown string', 'oops'],
    ['undefined', undefined],
    ['a Redis reply error of a wrong command', libraryError('ReplyError', 'WRONGTYPE Operation against a key holding the wrong kind of value')],
    ['a ClickHouse syntax error', libraryError('ClickHouseError', 'Syntax error', { code: '62', type: 'SYNTAX_ERROR' })],
    ['a file that is not there', libraryError('Error', "ENOENT: no such file or directory, open '/x'", { code: 'ENOENT', syscall: 'open' })],
    ['an error with a nonsense retryAfter', Object.assign(new Error('x'), { retryAfter: -1 })],
  ];
  for (const [what, err] of bugs) t.same(classify(err), { kind: 'bug' }, what);

  const caller = new CallerError('not_found');
  t.same(classify(caller), { kind: 'caller', error: caller });
  const cyclic: Error & { cause?: unknown } = new Error('a');
  cyclic.cause = cyclic;
  t.same(classify(cyclic), { kind: 'bug' }, 'a cause cycle ends the walk');
});

t.test('classify: what the real clients reject with while their server is unreachable is unavailable', async (t) => {
  const redis = new Redis('redis://127.0.0.1:9', { maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  const redisErr = await redis.ping().then(() => null, (err: unknown) => err);
  redis.disconnect();
  t.ok(redisErr instanceof Error, 'ioredis rejected');
  t.match(classify(redisErr), { kind: 'unavailable' }, `ioredis: ${String(redisErr)}`);

  const ch = createClient({ url: 'http://127.0.0.1:9', log: { level: ClickHouseLogLevel.OFF } });
  const chErr = await ch.query({ query: 'SELECT 1' }).then(() => null, (err: unknown) => err);
  await ch.close();
  t.ok(chErr instanceof Error, '@clickhouse/client rejected');
  t.match(classify(chErr), { kind: 'unavailable' }, `@clickhouse/client: ${String(chErr)}`);
});

const noClickHouse: GatewayDeps['clickhouse'] = {
  get: () => Promise.reject(new UnavailableError('no ClickHouse in this test')),
  ping: () => Promise.resolve(false),
};

interface ErrorBody {
  errors: { code: string; message: string; path?: string; error_id?: string }[];
}

t.test('a bug is 500 internal with an error_id; the log line with that id carries the stack', async (t) => {
  const logs = captureStderr(t);
  const gw = await gatewayWith(t, { ingest: { write: () => Promise.reject(new Error('ingest exploded')) }, clickhouse: noClickHouse });
  const answer = await call(`${gw.url}/api/sdk/events`, 'POST', gw.project.sdk_key, { external_id: 'u1', name: 'e' });
  t.equal(answer.status, 500);
  t.equal(answer.headers.get('retry-after'), null, 'a bug is no "try again later"');
  const [item, ...rest] = (answer.body as ErrorBody).errors;
  t.same(rest, []);
  t.match(item, { code: 'internal', message: String, error_id: /^[0-9a-f-]{36}$/ });
  t.notMatch(JSON.stringify(answer.body), /ingest exploded/, 'the answer does not leak the error');

  const line = logs.find((l) => l['error_id'] === item?.error_id);
  t.ok(line, 'a log line carries the error_id');
  t.match(line, { level: 'error', msg: '/api/sdk/events failed', err: { name: 'Error', message: 'ingest exploded' } });
  const stack = (line?.['err'] as { stack?: unknown } | undefined)?.stack;
  t.match(stack, /^Error: ingest exploded\n\s+at /, 'with the stack');
  t.match(stack, /failures\.test\.ts/, 'which points at where the error was made');

  const again = await call(`${gw.url}/api/sdk/events`, 'POST', gw.project.sdk_key, { external_id: 'u1', name: 'e' });
  t.not((again.body as ErrorBody).errors[0]?.error_id, item?.error_id, 'each failure gets its own id');
  const bad = await call(`${gw.url}/api/sdk/events`, 'POST', gw.project.sdk_key, { external_id: 'u1' });
  t.equal(bad.status, 400, 'a caller error still comes first, before the broken dependency is reached');
});

t.test('a bug whose causes form a cycle is still answered 500 and logged, the cycle cut', async (t) => {
  const logs = captureStderr(t);
  const looped: Error & { cause?: unknown } = new Error('outer', { cause: new Error('inner') });
  (looped.cause as Error & { cause?: unknown }).cause = looped;
  const gw = await gatewayWith(t, { ingest: { write: () => Promise.reject(looped) }, clickhouse: noClickHouse });
  const answer = await call(`${gw.url}/api/sdk/events`, 'POST', gw.project.sdk_key, { external_id: 'u1', name: 'e' });
  t.equal(answer.status, 500);
  const id = (answer.body as ErrorBody).errors[0]?.error_id;
  t.match(logs.find((l) => l['error_id'] === id), { err: { message: 'outer', stack: /^Error: outer\n/, cause: { message: 'inner', cause: '[Error, above]' } } });
});

t.test('a WebSocket operation that fails by a bug is answered internal with an error_id', async (t) => {
  const logs = captureStderr(t);
  const gw = await gatewayWith(t, { ingest: { write: () => Promise.reject(new TypeError('no entries today')) }, clickhouse: noClickHouse });
  const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/sdk/ws`, { headers: { authorization: `Bearer ${gw.project.sdk_key}` } });
  t.teardown(() => ws.close());
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const answer = new Promise<{ seq: number; errors: ErrorBody['errors'] }>((resolve) => ws.once('message', (m: Buffer) => resolve(JSON.parse(m.toString()))));
  ws.send(JSON.stringify({ seq: 4, op: 'event', external_id: 'u1', name: 'e' }));
  const { seq, errors } = await answer;
  t.equal(seq, 4);
  t.match(errors, [{ code: 'internal', error_id: String }]);
  t.match(logs.find((l) => l['error_id'] === errors[0]?.error_id), { level: 'error', err: { name: 'TypeError', stack: /TypeError: no entries today\n\s+at / } });
});

/** The route table with a WebSocket channel whose operation check has a bug. */
const brokenCheck = routes.map((r) =>
  r === sdkSocket
    ? socketRoute({
        ...sdkSocket,
        channel: ({ deps }) =>
          new SdkSocketChannel(deps, () => {
            throw new RangeError('validator bug');
          }),
      })
    : r,
);

t.test('a WebSocket frame whose check throws is answered internal, and the connection stays open', async (t) => {
  const logs = captureStderr(t);
  const gw = await gatewayWith(t, { ingest: { write: () => Promise.resolve() }, clickhouse: noClickHouse }, brokenCheck);
  const ws = new WebSocket(`${gw.url.replace('http', 'ws')}/api/sdk/ws`, { headers: { authorization: `Bearer ${gw.project.sdk_key}` } });
  t.teardown(() => ws.close());
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  for (const seq of [1, 2]) {
    const answer = new Promise<{ errors: ErrorBody['errors'] }>((resolve) => ws.once('message', (m: Buffer) => resolve(JSON.parse(m.toString()))));
    ws.send(JSON.stringify({ seq, op: 'event', external_id: 'u1', name: 'e' }));
    const { errors } = await answer;
    t.match(errors, [{ code: 'internal', error_id: String }], `frame ${seq}`);
    t.match(logs.find((l) => l['error_id'] === errors[0]?.error_id), { err: { name: 'RangeError', stack: /validator bug/ } });
  }
  t.equal(ws.readyState, WebSocket.OPEN);
});

t.test('unavailability is 503 with Retry-After from the failure, and no error line', async (t) => {
  const logs = captureStderr(t);
  const gw = await gatewayWith(t, {
    ingest: { write: () => Promise.reject(new UnavailableError('journal full', 3)) },
    clickhouse: { get: () => Promise.reject(libraryError('Error', 'connect ECONNREFUSED 127.0.0.1:8123', { code: 'ECONNREFUSED' })), ping: () => Promise.resolve(false) },
  });
  const write = await call(`${gw.url}/api/sdk/events`, 'POST', gw.project.sdk_key, { external_id: 'u1', name: 'e' });
  t.same([write.status, write.headers.get('retry-after'), write.body], [503, '3', { errors: [{ code: 'unavailable', message: 'The service cannot meet this call now.' }] }]);
  const read = await call(`${gw.url}/api/deliveries`, 'GET', gw.project.rest_key);
  t.same([read.status, read.headers.get('retry-after')], [503, '1']);
  t.same(logs.filter((l) => l['level'] === 'error'), [], 'nothing logged as a bug');
  t.ok(logs.some((l) => l['level'] === 'warn'), 'a warning');
});

t.test('a ClickHouse failure that is not unavailability is 500, never 503', async (t) => {
  captureStderr(t);
  const gw = await gatewayWith(t, {
    ingest: { write: () => Promise.resolve() },
    clickhouse: { get: () => Promise.reject(new RangeError('bad state')), ping: () => Promise.resolve(true) },
  });
  for (const path of ['/api/deliveries', '/api/deliveries/stats?group_by=status', '/api/events', '/api/segments/All/count']) {
    const answer = await call(`${gw.url}${path}`, 'GET', gw.project.rest_key);
    t.match([answer.status, answer.body], [500, { errors: [{ code: 'internal', error_id: String }] }], path);
  }
});
