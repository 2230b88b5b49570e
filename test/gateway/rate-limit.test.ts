import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { ClickHouseStore } from '../../engine/infra/clickhouse/store.ts';
import { commandTable } from '../../bin/cli/commands.ts';
import { parseCommandLine } from '../../bin/cli/parse.ts';
import { UsageError } from '../../bin/cli/usage.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { newWorkerId } from '../../engine/infra/process/worker-id.ts';
import { gatewayRole } from '../../gateway/role.ts';
import { routes } from '../../gateway/routes/table.ts';
import type { Caller } from '../../gateway/server/auth.ts';
import { openApiDocument } from '../../gateway/server/openapi.ts';
import { RateLimiter, type BucketStore } from '../../gateway/server/rate-limit.ts';
import { OrderedTakes } from '../../gateway/ws/ordered-takes.ts';
import { runEngine } from '../helpers/engine.ts';
import { serverEnv } from '../helpers/http-server.ts';
import { call, eventually, type Answer } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { REDIS_URL, cleanupPrefix, testPrefix, testRedis } from '../helpers/redis.ts';

/** One project under a fresh key prefix, on the Redis at `redisUrl`; gateways on it share its Redis state. */
interface Deployment {
  env: Record<string, string>;
  keystore: Keystore;
  project: CreatedProject;
  /** Starts one more gateway in this process (its own DATA_DIR, worker id and metrics). */
  gateway(): Promise<{ url: string; metrics: Metrics }>;
}

async function deployment(t: Test, extra: Record<string, string> = {}): Promise<Deployment> {
  const prefix = testPrefix();
  // No ClickHouse is opened: these routes never query it.
  const env = { REDIS_URL, KEY_PREFIX: prefix, PORT: '0', PARTITIONS: '8', LOG_LEVEL: 'error', CLICKHOUSE_URL: 'http://127.0.0.1:9', ...serverEnv, ...extra };
  const config = loadConfig(env);
  const redis = createRedis(config);
  const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
  const closers: (() => Promise<void>)[] = [];
  t.teardown(async () => {
    for (const close of closers.reverse()) await close();
    redis.disconnect();
    await cleanupPrefix(prefix, config.REDIS_URL);
  });
  const gateway = async (): Promise<{ url: string; metrics: Metrics }> => {
    const dataDir = mkdtempSync(join(tmpdir(), 'engine-rate-'));
    const own = loadConfig({ ...env, DATA_DIR: dataDir });
    const log = createLogger(own.LOG_LEVEL);
    const metrics = new Metrics();
    let port = 0;
    const role = await gatewayRole({
      config: own,
      log: { ...log, info: (msg, fields) => void (msg === 'listening' && (port = Number(fields?.['port']))) },
      metrics,
      workerId: newWorkerId(),
      clickhouse: new ClickHouseStore(own, log),
    });
    closers.push(async () => {
      await role.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    return { url: `http://127.0.0.1:${port}`, metrics };
  };
  return { env, keystore, project: await keystore.createProject('rate', false), gateway };
}

const event = { external_id: 'u1', name: 'tick' };
const sdkEvent = (url: string, key: string): Promise<Answer> => call(`${url}/api/sdk/events`, 'POST', key, event);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Asserts a 429 of docs/api.md#rate-limits-429-and-retry-after and returns its Retry-After in seconds. */
function limited(t: Test, answer: Answer, what: string): number {
  const retryAfter = Number(answer.headers.get('retry-after'));
  t.equal(answer.status, 429, `${what}: 429`);
  t.same(answer.body, { errors: [{ code: 'rate_limited', message: `Over the project's rate limit for this key; retry after ${retryAfter} s.` }] }, `${what}: body`);
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `${what}: Retry-After ${answer.headers.get('retry-after')} is whole seconds, at least 1`);
  return retryAfter;
}

function caller(rateLimit: Caller['rateLimit']): Caller {
  return { project: 'p', type: 'sdk', verifyIdentity: false, identitySecret: '', keyHash: 'h', rateLimit, timezone: 'UTC', frequencyCaps: {}, webDeliveredReceipts: false };
}

const noMetric = { labels: () => ({ inc: () => undefined }) };
const noReport = { report: () => undefined };

t.test('the limiter makes no Redis call without a limit, passes while Redis is unreachable, rejects a bug', async (t) => {
  let calls = 0;
  const store = (status: string, answer: () => Promise<number>): BucketStore => ({
    status,
    takeToken: () => {
      calls++;
      return answer();
    },
  });
  const topology = new Topology('x:', 8);
  const never = new RateLimiter(store('ready', () => Promise.resolve(0)), topology, noMetric, noReport);
  t.equal(never.take(caller(null)), null, 'no limit: nothing to wait for');
  t.equal(calls, 0, 'no limit: no Redis call');

  const limit = { per_second: 1, burst: 1 };
  t.equal(await new RateLimiter(store('reconnecting', () => Promise.resolve(5000)), topology, noMetric, noReport).take(caller(limit)), 0, 'not connected: passes');
  t.equal(calls, 0, 'not connected: no command queued');

  const reported: unknown[] = [];
  const timeout = Object.assign(new Error('Command timed out'), { name: 'Error' });
  const slow = new RateLimiter(store('ready', () => Promise.reject(timeout)), topology, noMetric, { report: (_what, err) => void reported.push(err) });
  t.equal(await slow.take(caller(limit)), 0, 'timed out: passes');
  t.same(reported, [timeout], 'the outage is reported (a rate-limited warning)');

  const bug = new RateLimiter(store('ready', () => Promise.reject(new TypeError('broken'))), topology, noMetric, noReport);
  await t.rejects(bug.take(caller(limit)) ?? Promise.resolve(0), TypeError, 'a bug is not passed off as an outage');

  const refusals: string[] = [];
  const full = new RateLimiter(store('ready', () => Promise.resolve(1001)), topology, { labels: (type) => ({ inc: () => void refusals.push(type) }) }, noReport);
  t.equal(await full.take(caller(limit)), 2, '1001 ms to wait is Retry-After 2');
  t.same(refusals, ['sdk'], 'a refusal is counted by key type');
});

t.test('frames are decided in arrival order even when their takes settle out of order', async (t) => {
  const settle: ((wait: number) => void)[] = [];
  const limiter = { take: (c: Caller) => (c.rateLimit === null ? null : new Promise<number>((resolve) => settle.push(resolve))) };
  const takes = new OrderedTakes(limiter, () => undefined);
  const decided: string[] = [];
  const on = caller({ per_second: 1, burst: 1 });
  takes.take(on, (wait) => void decided.push(`a${wait}`), () => undefined);
  takes.take(on, (wait) => void decided.push(`b${wait}`), () => undefined);
  takes.take(caller(null), (wait) => void decided.push(`c${wait}`), () => undefined);
  settle[1]?.(3);
  await sleep(10);
  t.same(decided, [], 'b waits for a; c (no limit) waits for both');
  settle[0]?.(0);
  await sleep(10);
  t.same(decided, ['a0', 'b3', 'c0']);
  takes.take(caller(null), (wait) => void decided.push(`d${wait}`), () => undefined);
  t.same(decided, ['a0', 'b3', 'c0', 'd0'], 'nothing waiting and no limit: decided at once');
});

t.test('default off: many calls of one key, none refused, no bucket in Redis', async (t) => {
  const d = await deployment(t);
  const gw = await d.gateway();
  const answers = await Promise.all(Array.from({ length: 200 }, () => sdkEvent(gw.url, d.project.sdk_key)));
  t.same(new Set(answers.map((a) => a.status)), new Set([202]));
  const redis = testRedis();
  t.teardown(() => redis.disconnect());
  t.same(await redis.keys(`${d.env['KEY_PREFIX']}rate:*`), [], 'no bucket was ever taken from');
});

t.test('on: the burst passes, the next call is 429 with Retry-After, and after that long calls pass', async (t) => {
  const d = await deployment(t);
  // One token every 2 s: the four calls below take far less than 2 s, however loaded the machine.
  t.ok(await d.keystore.setRateLimit(d.project.project_id, { per_second: 0.5, burst: 3 }));
  const gw = await d.gateway();
  for (let i = 0; i < 3; i++) t.equal((await sdkEvent(gw.url, d.project.sdk_key)).status, 202, `call ${i + 1} of the burst`);
  const retryAfter = limited(t, await sdkEvent(gw.url, d.project.sdk_key), 'past the burst');
  t.ok(retryAfter <= 2, `Retry-After ${retryAfter} is at most one token's time`);
  limited(t, await call(`${gw.url}/api/sdk/users`, 'POST', d.project.sdk_key, { not: 'valid' }), 'another route, bad body: the limit comes first');

  await sleep(retryAfter * 1000);
  t.equal((await sdkEvent(gw.url, d.project.sdk_key)).status, 202, 'passes after Retry-After');
  const metrics = await call(`${gw.url}/metrics`, 'GET', null);
  t.match(metrics.body, /svc_rate_limited_total\{key_type="sdk"\} 2\n/, 'the refusals are counted');
});

t.test('each key has its own bucket: SDK and REST keys, and two SDK keys of one project', async (t) => {
  const d = await deployment(t);
  await d.keystore.setRateLimit(d.project.project_id, { per_second: 0.2, burst: 2 });
  const otherSdk = await d.keystore.createKey(d.project.project_id, 'sdk');
  const gw = await d.gateway();
  for (let i = 0; i < 2; i++) t.equal((await sdkEvent(gw.url, d.project.sdk_key)).status, 202);
  limited(t, await sdkEvent(gw.url, d.project.sdk_key), 'first SDK key');

  t.equal((await sdkEvent(gw.url, otherSdk)).status, 202, 'the other SDK key has its own bucket');
  const rest = d.project.rest_key;
  t.equal((await sdkEvent(gw.url, rest)).status, 202, 'the REST key on an SDK route has its own bucket');
  t.equal((await call(`${gw.url}/api/segments`, 'GET', rest)).status, 200, 'REST route');
  limited(t, await call(`${gw.url}/api/segments`, 'GET', rest), 'REST key past its burst');
  t.equal((await call(`${gw.url}/api/segments`, 'GET', otherSdk)).status, 403, 'an SDK key on a REST route is 403, not 429');
  t.equal((await sdkEvent(gw.url, otherSdk)).status, 202, 'and that 403 took no token');
});

t.test('two gateways on one Redis draw on one bucket per key', async (t) => {
  const d = await deployment(t);
  await d.keystore.setRateLimit(d.project.project_id, { per_second: 0.2, burst: 4 });
  const [a, b] = await Promise.all([d.gateway(), d.gateway()]);
  const statuses: number[] = [];
  for (const url of [a.url, b.url, a.url, b.url]) statuses.push((await sdkEvent(url, d.project.sdk_key)).status);
  t.same(statuses, [202, 202, 202, 202], 'the burst of 4, spread over both');
  limited(t, await sdkEvent(a.url, d.project.sdk_key), 'gateway a');
  limited(t, await sdkEvent(b.url, d.project.sdk_key), 'gateway b');
});

t.test('WebSocket: the upgrade takes a token and each frame one more', async (t) => {
  const d = await deployment(t);
  await d.keystore.setRateLimit(d.project.project_id, { per_second: 0.2, burst: 3 });
  const gw = await d.gateway();
  const url = `${gw.url.replace('http', 'ws')}/api/sdk/ws`;
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${d.project.sdk_key}` } });
  t.teardown(() => ws.close());
  const answers: unknown[] = [];
  ws.on('message', (data: Buffer) => answers.push(JSON.parse(data.toString())));
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  for (const seq of [1, 2, 3]) ws.send(JSON.stringify({ seq, op: 'event', ...event }));
  for (let i = 0; answers.length < 3 && i < 500; i++) await sleep(20);
  const third = answers[2] as { errors?: { message?: string }[] } | undefined;
  const seconds = Number(/retry after (\d+) s/.exec(third?.errors?.[0]?.message ?? '')?.[1]);
  t.ok(seconds >= 1, `the refused frame says when to retry (${seconds} s)`);
  t.same(answers, [
    { seq: 1, accepted: true },
    { seq: 2, accepted: true },
    { seq: 3, errors: [{ code: 'rate_limited', message: `Over the project's rate limit for this key; retry after ${seconds} s.` }] },
  ]);

  const refused = await new Promise<IncomingMessage>((resolve, reject) => {
    const again = new WebSocket(url, { headers: { authorization: `Bearer ${d.project.sdk_key}` } });
    again.once('unexpected-response', (_req, res) => resolve(res));
    again.once('open', () => reject(new Error('the upgrade was accepted past the limit')));
  });
  t.equal(refused.statusCode, 429, 'an upgrade past the limit is 429');
  t.ok(Number(refused.headers['retry-after']) >= 1, 'with Retry-After');
  refused.destroy();
});

t.test('with Redis down the limit is lifted: buffered writes spill and answer 202, not 429 or 503', async (t) => {
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  const d = await deployment(t, { REDIS_URL: server.url, REDIS_TIMEOUT_MS: '300' });
  await d.keystore.setRateLimit(d.project.project_id, { per_second: 0.2, burst: 1 });
  const gw = await d.gateway();
  t.equal((await sdkEvent(gw.url, d.project.sdk_key)).status, 202);
  limited(t, await sdkEvent(gw.url, d.project.sdk_key), 'while Redis is up');

  await server.stop();
  for (let i = 0; i < 3; i++) t.equal((await sdkEvent(gw.url, d.project.sdk_key)).status, 202, `write ${i + 1} during the outage`);
  await server.restart();
});

t.test('engine project update --rate-limit sets the limit and off clears it; gateways follow within 5 s', async (t) => {
  const d = await deployment(t);
  const gw = await d.gateway();
  const id = d.project.project_id;
  t.equal((await sdkEvent(gw.url, d.project.sdk_key)).status, 202, 'no limit yet (the gateway caches that)');

  const set = await runEngine(['project', 'update', id, '--rate-limit', '0.5', '--burst', '2'], d.env);
  t.same([set.code, set.stdout], [0, `rate limit 0.5/s per key, burst 2 for project ${id}\n`], set.stderr);
  t.same((await d.keystore.getProject(id))?.rate_limit, { per_second: 0.5, burst: 2 });
  const changed = Date.now();
  const refused = await eventually('a 429', async () => {
    const answer = await sdkEvent(gw.url, d.project.sdk_key);
    return answer.status === 429 ? answer : undefined;
  }, 8000);
  limited(t, refused, 'once the gateway sees the limit');
  t.ok(Date.now() - changed < 5000, `seen within ${Date.now() - changed} ms`);

  const defaults = await runEngine(['project', 'update', id, '--rate-limit', '3'], d.env);
  t.equal(defaults.code, 0, defaults.stderr);
  t.same((await d.keystore.getProject(id))?.rate_limit, { per_second: 3, burst: 3 }, 'the burst defaults to the rate, rounded up');

  const off = await runEngine(['project', 'update', id, '--rate-limit', 'off'], d.env);
  t.same([off.code, off.stdout], [0, `rate limit off for project ${id}\n`], off.stderr);
  t.equal((await d.keystore.getProject(id))?.rate_limit, null);
  await eventually('the limit lifted', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => sdkEvent(gw.url, d.project.sdk_key)));
    return answers.every((a) => a.status === 202) ? true : undefined;
  }, 8000);

  const mistakes: [string[], RegExp][] = [
    [['--rate-limit', '0'], /--rate-limit must be off or calls a second from 0.001/],
    [['--rate-limit', '1', '--burst', '0'], /--burst must be from 1/],
    [['--burst', '5'], /--burst goes with --rate-limit/],
    [['--rate-limit', 'off', '--burst', '5'], /--burst goes with --rate-limit/],
    [[], /needs --identity-verification, --rate-limit, --timezone, --frequency-cap or --web-delivered-receipts/],
    [['--timezone', 'Mars/Olympus'], /--timezone must be an IANA time zone/],
  ];
  const table = commandTable({});
  for (const [flags, message] of mistakes) {
    const invocation = parseCommandLine(table, ['project', 'update', id, ...flags]);
    const run = invocation.kind === 'run' ? invocation.command.run(loadConfig(d.env), invocation) : Promise.resolve(0);
    const err = await run.then(() => null, (e: unknown) => e);
    t.ok(err instanceof UsageError && message.test(err.message), `${flags.join(' ') || 'no setting'}: a usage mistake (${String(err)})`);
  }
  const spawned = await runEngine(['project', 'update', id, '--rate-limit', 'fast'], d.env);
  t.same([spawned.code, /got "fast"/.test(spawned.stderr), /usage:/.test(spawned.stderr)], [2, true, true], 'exit 2 with the reason and the usage');
  t.equal((await d.keystore.getProject(id))?.rate_limit, null, 'a refused command changes nothing');
  const unknown = await runEngine(['project', 'update', 'no-such-project', '--rate-limit', '1'], d.env);
  t.same([unknown.code, /unknown project no-such-project/.test(unknown.stderr)], [1, true]);
});

t.test('the OpenAPI document lists 429 with Retry-After on keyed operations only', async (t) => {
  const doc = openApiDocument(routes, 'test') as { paths: Record<string, Record<string, { responses: Record<string, { headers?: unknown }> }>> };
  const keyed = doc.paths['/api/sdk/events']?.['post']?.responses['429'];
  t.match(keyed, { description: /rate_limited/, headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 } } } });
  t.match(doc.paths['/api/segments']?.['get']?.responses['429'], { headers: { 'Retry-After': {} } });
  t.match(doc.paths['/api/sdk/ws']?.['get']?.responses['429'], { headers: { 'Retry-After': {} } });
  t.equal(doc.paths['/healthz']?.['get']?.responses['429'], undefined, 'no key, no limit');
});
