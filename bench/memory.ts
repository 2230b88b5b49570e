/**
 * Memory benchmark: what Redis keeps per unit of state once every write is applied and recorded,
 * read from `INFO memory` (used_memory) as deltas between stages of one run, less two things that
 * are not state: the clients' buffers and the consumed logs (streams all of whose consumer groups
 * have read and acknowledged everything, whose entries wait for a trim). The keys (DBSIZE) and
 * the bytes by key type (MEMORY USAGE of every key) are the breakdown. Key names are never read:
 * the layout may change under it.
 *
 * Each tree runs on a redis-server of its own (free port, `--save "" --appendonly no`), with one
 * `engine start` process (every role, embedded ClickHouse) from the tree's sources. Stages, each
 * measured against the one before it:
 * 1. the empty engine (project created, started, settled);
 * 2. BENCH_USERS users, each identified with 5 tags and one IOS_PUSH subscription (SDK batches);
 * 3. 5 more tags for each of them; 4. a second IOS_PUSH subscription for each;
 * 5. BENCH_EVENTS events, each with a distinct idempotency_key (a UUID);
 * 6. BENCH_WEBHOOK_EVENTS `delivery.skipped` events queued for a webhook endpoint on a closed port
 *    (a notification to as many ids without a subscription);
 * 7. a notification in flight to BENCH_RECIPIENTS users (one IOS_PUSH subscription each, written
 *    first and measured apart) whose APNs endpoint, an HTTP/2 server of this process, never answers.
 * "Settled" means: every consumer group of every stream has read all of it and has nothing
 * pending (apply, recorder, webhooks, fan-out, dispatch), and DBSIZE and used_memory are still;
 * for the notification in flight, that it is `sending` and nothing moves.
 *
 * Baseline in the same run: the same workload against the last release (BENCH_BASELINE_COMMIT,
 * default 6027315, 0.11.1) in a git worktree under the temp dir, removed at the end;
 * BENCH_BASELINE_COMMIT=none skips it.
 * Goals: a user with 5 tags and one push subscription at most 600 bytes; an idempotent event at most 40.
 *
 * `node --import tsx bench/memory.ts` (or `npm run bench -- memory`). Environment: BENCH_USERS
 * (default 20000), BENCH_EVENTS (100000), BENCH_WEBHOOK_EVENTS (20000), BENCH_RECIPIENTS (10000;
 * 0 skips the stage, as BENCH_WEBHOOK_EVENTS=0 does), BENCH_BASELINE_COMMIT, REDIS_SERVER
 * (the redis-server binary). Writes bench/reports/memory.json.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createH2Server, type Http2Server, type ServerHttp2Session } from 'node:http2';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startChild, type Child } from './child.ts';
import { call, sleep, waitFor } from './deployment.ts';
import { writeReport } from './report.ts';
import { log, runBench } from './run.ts';
import { positive } from './settings.ts';
import type { SummaryRow } from './summary.ts';
import { machine, printRows } from './table.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const settings = {
  users: positive('BENCH_USERS', 20_000),
  events: positive('BENCH_EVENTS', 100_000),
  webhook_events: positive('BENCH_WEBHOOK_EVENTS', 20_000, true),
  recipients: positive('BENCH_RECIPIENTS', 10_000, true),
  tags_per_user: 5,
  extra_tags_per_user: 5,
};
const BASELINE_COMMIT = process.env['BENCH_BASELINE_COMMIT'] ?? '6027315';
const BASELINE_NAME = BASELINE_COMMIT === '6027315' ? '0.11.1' : BASELINE_COMMIT;
const REDIS_SERVER = process.env['REDIS_SERVER'] ?? 'redis-server';
const GOAL_USER_BYTES = 600;
const GOAL_EVENT_BYTES = 40;
/** Operations per SDK batch (the API takes up to 1000), and batches in flight. */
const BATCH = 500;
const IN_FLIGHT = 8;
/** include_external_user_ids takes at most 20 000 ids. */
const IDS_PER_NOTIFICATION = 20_000;

const work = mkdtempSync(join(tmpdir(), 'bench-memory-'));
const cleanups: (() => Promise<void>)[] = [];

/** Where the used_memory of a stage went: keys and MEMORY USAGE bytes by type. */
interface Snapshot {
  used_memory: number;
  keys: number;
  by_type: Record<string, { keys: number; bytes: number }>;
  /** used_memory without the consumed logs and the clients' buffers: what the per-unit figures are read from. */
  state_memory: number;
  /** The clients' query and output buffers (mem_clients_normal and mem_clients_slaves): they come and go with the traffic. */
  clients: number;
  /**
   * Streams every consumer group of which has read and acknowledged everything: entries waiting
   * for a trim (the apply trims an ingest stream only past 512 entries), not state; `bytes` is
   * what used_memory drops by when they are deleted.
   */
  consumed_logs: { streams: number; entries: number; bytes: number };
}

interface Stage {
  name: string;
  /** What one unit is, e.g. `user`; the per-unit figures divide by `units`. */
  unit: string;
  units: number;
  before: Snapshot;
  after: Snapshot;
  seconds: number;
}

interface PerUnit {
  stage: string;
  unit: string;
  units: number;
  /** used_memory delta without the consumed logs' and the clients' deltas, per unit: what stays. */
  bytes: number;
  /** used_memory delta per unit, consumed logs and clients included. */
  used_memory_bytes: number;
  keys: number;
  /** MEMORY USAGE bytes per unit by key type (the rest of used_memory is Redis's own overhead). */
  bytes_by_type: Record<string, number>;
}

interface TreeResult {
  tree: string;
  commit: string;
  /** Files of engine/, actors/, gateway/, schemas/ changed but not committed, run as they are. */
  uncommitted: string[];
  redis_version: string;
  empty: Snapshot;
  stages: Stage[];
  per_unit: PerUnit[];
}

// --- A redis-server of the run's own --------------------------------------------------------

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port below the ephemeral range, so no client socket takes it between the check and the bind. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 8_000);
    if (await bindable(port)) return port;
  }
}

async function startRedis(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const proc: ChildProcess = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work], { stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGKILL');
    await exited;
  };
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await waitFor(`redis-server on port ${port}`, async () => {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
      if (probe.status !== 'ready') await probe.connect();
      return (await probe.ping()) === 'PONG' ? true : undefined;
    }, 10_000, 50);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    probe.disconnect();
  }
  return { url, stop };
}

// --- What Redis holds -----------------------------------------------------------------------

function fieldsOf(reply: unknown): Map<string, unknown> {
  const list = Array.isArray(reply) ? (reply as unknown[]) : [];
  const out = new Map<string, unknown>();
  for (let i = 0; i + 1 < list.length; i += 2) out.set(String(list[i]), list[i + 1]);
  return out;
}

async function scanAll(redis: Redis, type?: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = type === undefined ? await redis.scan(cursor, 'COUNT', 5000) : await redis.scan(cursor, 'COUNT', 5000, 'TYPE', type);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

interface StreamState {
  key: string;
  groups: number;
  entries: number;
  /** Entries some group has not read yet or not acknowledged, summed over its groups. */
  outstanding: number;
  /** For an error message: each group with entries outstanding. */
  where: string[];
}

/**
 * Every stream and how far its consumer groups are; a group whose lag Redis cannot tell counts 1
 * until it has read up to the last entry.
 */
async function streams(redis: Redis): Promise<StreamState[]> {
  const out: StreamState[] = [];
  for (const key of await scanAll(redis, 'stream')) {
    const info = fieldsOf(await redis.xinfo('STREAM', key));
    const last = String(info.get('last-generated-id'));
    const state: StreamState = { key, groups: 0, entries: Number(info.get('length') ?? 0), outstanding: 0, where: [] };
    for (const raw of (await redis.xinfo('GROUPS', key)) as unknown[]) {
      const g = fieldsOf(raw);
      const lag = g.get('lag');
      // A group moved past the end (XGROUP SETID to a time, as the webhooks tap does) has no lag.
      const unread = typeof lag === 'number' ? lag : idBelow(String(g.get('last-delivered-id')), last) ? 1 : 0;
      const pending = Number(g.get('pending') ?? 0);
      state.groups += 1;
      state.outstanding += unread + pending;
      if (unread + pending > 0) state.where.push(`${key} ${String(g.get('name'))}: ${unread} unread, ${pending} pending`);
    }
    out.push(state);
  }
  return out;
}

async function outstanding(redis: Redis): Promise<{ total: number; where: string[] }> {
  const all = await streams(redis);
  return { total: all.reduce((sum, s) => sum + s.outstanding, 0), where: all.flatMap((s) => s.where) };
}

/**
 * Reads used_memory and the clients' buffers, deletes every consumed log (KEYS: the streams),
 * reads used_memory again and restores them as they were, in one script so no client sees them
 * gone. MEMORY USAGE misjudges a stream by 5 to 15%, more than some whole stages weigh. Answers
 * the two readings, the entries deleted, the names of the consumed logs and the clients' bytes.
 */
const WITHOUT_LOGS = `
local function fields(a) local t = {} for i = 1, #a, 2 do t[a[i]] = a[i + 1] end return t end
local function below(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
local function used() return tonumber(string.match(redis.call('INFO', 'memory'), 'used_memory:(%d+)')) end
local info = redis.call('INFO', 'memory')
local before = tonumber(string.match(info, 'used_memory:(%d+)'))
local clients = tonumber(string.match(info, 'mem_clients_normal:(%d+)')) + tonumber(string.match(info, 'mem_clients_slaves:(%d+)'))
local names, dumps, entries = {}, {}, 0
for _, key in ipairs(KEYS) do
  if redis.call('TYPE', key).ok == 'stream' then
    local groups = redis.call('XINFO', 'GROUPS', key)
    local stream = fields(redis.call('XINFO', 'STREAM', key))
    local consumed = #groups > 0
    for _, raw in ipairs(groups) do
      local g = fields(raw)
      if g['pending'] > 0 then consumed = false
      elseif g['lag'] then consumed = consumed and g['lag'] == 0
      elseif below(g['last-delivered-id'], stream['last-generated-id']) then consumed = false end
    end
    if consumed then
      names[#names + 1] = key
      dumps[#dumps + 1] = redis.call('DUMP', key)
      entries = entries + stream['length']
    end
  end
end
for _, key in ipairs(names) do redis.call('DEL', key) end
local without = used()
for i, key in ipairs(names) do redis.call('RESTORE', key, 0, dumps[i]) end
return {before, without, entries, names, clients}
`;

async function withoutLogs(redis: Redis): Promise<{ used: number; without: number; entries: number; names: string[]; clients: number }> {
  const keys = await scanAll(redis, 'stream');
  const [used, without, entries, names, clients] = (await redis.eval(WITHOUT_LOGS, keys.length, ...keys)) as [number, number, number, string[], number];
  return { used, without, entries, names, clients };
}

function idBelow(a: string, b: string): boolean {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  return am < bm || (am === bm && as < bs);
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? 0);
}

/**
 * Waits until `done` holds and DBSIZE and used_memory (to 0.1%: clients' buffers move a little)
 * are the same over three polls a second apart; then reads the figures three times.
 */
async function settle(redis: Redis, what: string, done: () => Promise<boolean>, ms = 300_000): Promise<Snapshot> {
  const deadline = Date.now() + ms;
  let still = 0;
  let previous = { keys: -1, memory: -1 };
  for (;;) {
    if (Date.now() > deadline) {
      const left = await outstanding(redis);
      throw new Error(`timed out waiting for ${what} to settle: ${left.where.slice(0, 5).join('; ') || `nothing outstanding; keys ${previous.keys}, used_memory ${previous.memory}`}`);
    }
    if (!(await done())) {
      still = 0;
      await sleep(250);
      continue;
    }
    const now = { keys: await redis.dbsize(), memory: await usedMemory(redis) };
    still = now.keys === previous.keys && Math.abs(now.memory - previous.memory) <= previous.memory * 0.001 ? still + 1 : 0;
    previous = now;
    if (still >= 2) break;
    await sleep(1000);
  }
  // The median of three readings of each figure. The first restore leaves the logs a little
  // smaller than the engine grew them, which moves used_memory, not the state.
  const reads: Awaited<ReturnType<typeof withoutLogs>>[] = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(300);
    reads.push(await withoutLogs(redis));
  }
  const median = (pick: (r: (typeof reads)[number]) => number): number => reads.map(pick).sort((a, b) => a - b)[1] ?? 0;
  const last = reads[reads.length - 1] ?? { used: 0, without: 0, entries: 0, names: [], clients: 0 };
  const used = median((r) => r.used);
  const clients = median((r) => r.clients);
  const state = median((r) => r.without - r.clients);
  return {
    used_memory: used,
    state_memory: state,
    clients,
    keys: await redis.dbsize(),
    by_type: await byType(redis, new Set(last.names)),
    consumed_logs: { streams: last.names.length, entries: last.entries, bytes: median((r) => r.used - r.without) },
  };
}

/** MEMORY USAGE (every sample) of every key but the consumed logs, summed by TYPE; read after used_memory. */
async function byType(redis: Redis, logs: Set<string>): Promise<Snapshot['by_type']> {
  const out: Snapshot['by_type'] = {};
  const keys = (await scanAll(redis)).filter((key) => !logs.has(key));
  for (let i = 0; i < keys.length; i += 2000) {
    const pipeline = redis.pipeline();
    const chunk = keys.slice(i, i + 2000);
    for (const key of chunk) pipeline.type(key).memory('USAGE', key, 'SAMPLES', 0);
    const replies = (await pipeline.exec()) ?? [];
    for (let k = 0; k < chunk.length; k++) {
      const type = String(replies[2 * k]?.[1] ?? 'none');
      if (type === 'none') continue; // expired or deleted between SCAN and TYPE
      const entry = (out[type] ??= { keys: 0, bytes: 0 });
      entry.keys += 1;
      entry.bytes += Number(replies[2 * k + 1]?.[1] ?? 0);
    }
  }
  return out;
}

// --- The workload ---------------------------------------------------------------------------

const userId = (i: number): string => `user${String(i).padStart(6, '0')}`;
const recipientId = (i: number): string => `rcpt${String(i).padStart(6, '0')}`;
/** An APNs device token: 64 hex characters. */
const iosToken = (seed: string): string => createHash('sha256').update(seed).digest('hex');
const PLANS = ['free', 'pro', 'team'];
const COUNTRIES = ['US', 'DE', 'FR', 'BR', 'IN', 'JP'];

function firstTags(i: number): Record<string, string | number> {
  return { plan: PLANS[i % 3] ?? 'free', level: i % 50, country: COUNTRIES[i % 6] ?? 'US', language: 'en', signup_day: `2026-11-${String(1 + (i % 28)).padStart(2, '0')}` };
}

function extraTags(i: number): Record<string, string | number> {
  return { cohort: `c${i % 12}`, score: i % 1000, last_screen: 'settings', app_theme: i % 2 === 0 ? 'dark' : 'light', referrer: `campaign-${i % 40}` };
}

function subscribe(externalId: string, token: string): Record<string, string> {
  return { op: 'subscribe', external_id: externalId, type: 'IOS_PUSH', token, device_model: 'iPhone15,2', device_os: '17.4.1', app_version: '3.2.1' };
}

/** Sends `count` operations as SDK batches, IN_FLIGHT at once; every batch must be accepted. */
async function sendOps(base: string, key: string, count: number, op: (i: number) => Record<string, unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let from = next; from < count; from = next) {
      next = Math.min(count, from + BATCH);
      const operations = Array.from({ length: next - from }, (_, k) => op(from + k));
      const answer = await call(`${base}/api/sdk/batch`, 'POST', key, { operations });
      if (answer.status !== 202) throw new Error(`POST /api/sdk/batch answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** Sends one notification per IDS_PER_NOTIFICATION of `ids`; resolves to their ids. */
async function notify(base: string, restKey: string, ids: string[]): Promise<string[]> {
  const created: string[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_NOTIFICATION) {
    const answer = await call(`${base}/api/notifications`, 'POST', restKey, {
      include_external_user_ids: ids.slice(i, i + IDS_PER_NOTIFICATION),
      headings: { en: 'Your order shipped' },
      contents: { en: 'It arrives on Thursday; tap to follow it.' },
      data: { order: 'A-1234' },
    });
    if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    created.push((answer.body as { id: string }).id);
  }
  return created;
}

/**
 * An APNs endpoint that never answers: an HTTP/2 server (clear text, as an `http://` base_url
 * asks) that takes every stream and leaves it open.
 */
async function silentApns(): Promise<{ url: string; stop: () => Promise<void> }> {
  const sessions = new Set<ServerHttp2Session>();
  const server: Http2Server = createH2Server();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream) => stream.on('error', () => undefined));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const stop = async (): Promise<void> => {
    for (const session of sessions) session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stop };
}

function apnsCredentials(baseUrl: string): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(work, 'apns-silent.json');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  writeFileSync(file, JSON.stringify({ team_id: 'TEAM123456', key_id: 'KEY1234567', private_key: pem, topic: 'com.example.app', environment: 'production', base_url: baseUrl }));
  return file;
}

// --- One tree -------------------------------------------------------------------------------

interface Tree {
  name: string;
  dir: string;
  commit: string;
  uncommitted: string[];
}

async function measureTree(tree: Tree, apnsUrl: string): Promise<TreeResult> {
  log(`memory: ${tree.name} (${tree.commit}) from ${tree.dir}`);
  const redisServer = await startRedis();
  cleanups.push(redisServer.stop);
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 2 });
  cleanups.push(async () => redis.disconnect());
  const dataDir = mkdtempSync(join(work, 'data-'));
  const engineBin = join(tree.dir, 'bin/engine.js');
  // Sources, not dist/: a build may be older than the tree. No SQL listener (its fixed port); the
  // silent APNs endpoint and the closed webhook port are on loopback, refused unless allowed.
  // PROVIDER_TIMEOUT_MS at its maximum: no send in flight times out while it is measured.
  const env: Record<string, string> = {
    KEY_PREFIX: 'mem:',
    DATA_DIR: dataDir,
    REDIS_URL: redisServer.url,
    LOG_LEVEL: 'info',
    SQL_PORT: '0',
    OUTBOUND_ALLOW_PRIVATE: 'true',
    ENGINE_FROM_SOURCE: '1',
    PROVIDER_TIMEOUT_MS: '120000',
  };
  const cli = async (...args: string[]): Promise<string> => (await run(process.execPath, [engineBin, ...args], { env: { ...process.env, ...env }, cwd: tree.dir })).stdout;
  const project = JSON.parse(await cli('project', 'create', 'bench-memory', '--json')) as { project_id: string; sdk_key: string; rest_key: string };
  await cli('providers', 'set', project.project_id, 'apns', '--file', apnsCredentials(apnsUrl));
  const engine: Child = await startChild('engine', [engineBin, 'start', '--port', '0'], env, { readyMsg: 'started', timeoutMs: 180_000 });
  cleanups.push(engine.stop);
  const base = `http://127.0.0.1:${engine.port}`;
  const alive = (): void => {
    if (engine.proc.exitCode !== null || engine.proc.signalCode !== null) throw new Error(`the engine exited (${engine.proc.exitCode ?? engine.proc.signalCode}): ${engine.output()}`);
  };
  const drained = async (): Promise<boolean> => {
    alive();
    return (await outstanding(redis)).total === 0;
  };

  const stages: Stage[] = [];
  let last = await settle(redis, 'the empty engine', drained);
  const empty = last;
  log(`  empty engine: used_memory ${last.used_memory} (${last.state_memory} without the consumed logs and the clients), ${last.keys} keys`);
  const stage = async (name: string, unit: string, units: number, act: () => Promise<void>, done: () => Promise<boolean> = drained): Promise<void> => {
    const t0 = performance.now();
    await act();
    const after = await settle(redis, name, done);
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    stages.push({ name, unit, units, before: last, after, seconds });
    const per = (bytes: number): number => Math.round(bytes / units);
    const types = Object.keys(after.by_type).map((t) => `${t} ${per((after.by_type[t]?.bytes ?? 0) - (last.by_type[t]?.bytes ?? 0))}`);
    const logs = after.consumed_logs.bytes - last.consumed_logs.bytes;
    log(
      `  ${name}: ${per(after.state_memory - last.state_memory)} bytes/${unit} (${per(logs)} more in consumed logs), ${((after.keys - last.keys) / units).toFixed(2)} keys/${unit} ` +
        `(${seconds} s; MEMORY USAGE by type ${types.join(', ')}; consumed logs now ${after.consumed_logs.entries} entries, ${Math.round(after.consumed_logs.bytes / 1024)} KiB)`,
    );
    last = after;
  };
  const { sdk_key: sdk, rest_key: rest } = project;
  const N = settings.users;

  await stage('user with 5 tags and one push subscription', 'user', N, () =>
    sendOps(base, sdk, 2 * N, (k) => {
      const i = Math.floor(k / 2);
      return k % 2 === 0 ? { op: 'identify', external_id: userId(i), tags: firstTags(i) } : subscribe(userId(i), iosToken(`${userId(i)}/1`));
    }),
  );
  await stage('extra tag', 'tag', settings.extra_tags_per_user * N, () => sendOps(base, sdk, N, (i) => ({ op: 'tags', external_id: userId(i), tags: extraTags(i) })));
  await stage('extra push subscription', 'subscription', N, () => sendOps(base, sdk, N, (i) => subscribe(userId(i), iosToken(`${userId(i)}/2`))));
  await stage('event with an idempotency_key', 'event', settings.events, () =>
    sendOps(base, sdk, settings.events, (i) => ({
      op: 'event',
      external_id: userId(i % N),
      name: 'purchase',
      properties: { sku: `A-${i % 100}`, amount: 12.5 },
      idempotency_key: randomUUID(),
    })),
  );

  if (settings.webhook_events > 0) {
    // A closed port: every attempt is refused at once and the endpoint backs off, its queue kept.
    const closed = await freePort();
    const hook = await call(`${base}/api/webhooks`, 'POST', rest, { url: `http://127.0.0.1:${closed}/hook`, events: ['delivery.skipped'] });
    if (hook.status !== 201) throw new Error(`POST /api/webhooks answered ${hook.status}: ${JSON.stringify(hook.body).slice(0, 300)}`);
    const hookId = (hook.body as { id: string }).id;
    last = await settle(redis, 'the webhook endpoint', drained);
    const queued = async (): Promise<boolean> => {
      const view = await call(`${base}/api/webhooks/${hookId}`, 'GET', rest);
      const health = (view.body as { health?: { queued?: number } }).health;
      return (health?.queued ?? 0) >= settings.webhook_events && (await drained());
    };
    // Ids nobody registered: each job is recorded skipped (no_subscription), one event each.
    const ids = Array.from({ length: settings.webhook_events }, (_, i) => `nobody${String(i).padStart(6, '0')}`);
    await stage('queued webhook event (delivery.skipped)', 'event', settings.webhook_events, async () => void (await notify(base, rest, ids)), queued);
  }

  if (settings.recipients > 0) {
    const R = settings.recipients;
    await stage('recipient, one push subscription (written before the notification)', 'user', R, () =>
      sendOps(base, sdk, R, (i) => subscribe(recipientId(i), iosToken(`${recipientId(i)}/1`))),
    );
    const ids = Array.from({ length: R }, (_, i) => recipientId(i));
    let notifications: string[] = [];
    // Sends never finish: settled once every notification is sending and nothing moves any more.
    const sending = async (): Promise<boolean> => {
      alive();
      for (const id of notifications) {
        const view = await call(`${base}/api/notifications/${id}`, 'GET', rest);
        if ((view.body as { status?: string }).status !== 'sending') return false;
      }
      return true;
    };
    await stage('recipient of a notification in flight (provider never answers)', 'recipient', R, async () => void (notifications = await notify(base, rest, ids)), sending);
  }

  await engine.stop();
  const info = await redis.info('server');
  redis.disconnect();
  await redisServer.stop();
  const perUnit = stages
    .filter((s) => !s.name.startsWith('recipient, one push subscription'))
    .map((s): PerUnit => {
      const types = new Set([...Object.keys(s.before.by_type), ...Object.keys(s.after.by_type)]);
      const bytesByType = Object.fromEntries(
        [...types].sort().map((t) => [t, round(((s.after.by_type[t]?.bytes ?? 0) - (s.before.by_type[t]?.bytes ?? 0)) / s.units)]),
      );
      const used = s.after.used_memory - s.before.used_memory;
      return {
        stage: s.name,
        unit: s.unit,
        units: s.units,
        bytes: round((s.after.state_memory - s.before.state_memory) / s.units),
        used_memory_bytes: round(used / s.units),
        keys: Math.round(((s.after.keys - s.before.keys) / s.units) * 1000) / 1000,
        bytes_by_type: bytesByType,
      };
    });
  return { tree: tree.name, commit: tree.commit, uncommitted: tree.uncommitted, redis_version: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown', empty, stages, per_unit: perUnit };
}

const round = (v: number): number => Math.round(v * 10) / 10;

// --- The run --------------------------------------------------------------------------------

const git = async (...args: string[]): Promise<string> => (await run('git', args, { cwd: root })).stdout.trim();
const ENGINE_DIRS = ['engine', 'actors', 'gateway', 'schemas', 'bin'];

/** The last release's tree: a detached worktree under the temp dir, sharing this tree's node_modules. */
async function baselineTree(): Promise<Tree> {
  const dir = join(work, 'baseline');
  await git('worktree', 'add', '--detach', dir, BASELINE_COMMIT);
  cleanups.push(async () => void (await git('worktree', 'remove', '--force', dir).catch((err: unknown) => log(`memory: could not remove the worktree ${dir}: ${String(err)}`))));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return { name: BASELINE_NAME, dir, commit: await git('rev-parse', '--short', BASELINE_COMMIT), uncommitted: [] };
}

const GOALS: Record<string, number> = { user: GOAL_USER_BYTES, 'event with an idempotency_key': GOAL_EVENT_BYTES };
const goalOf = (row: PerUnit): number | null => GOALS[row.stage.startsWith('user with') ? 'user' : row.stage] ?? null;

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const apns = await silentApns();
  cleanups.push(apns.stop);
  const current: Tree = {
    name: 'this tree',
    dir: root,
    commit: await git('rev-parse', '--short', 'HEAD'),
    uncommitted: (await git('status', '--porcelain', '--', ...ENGINE_DIRS)).split('\n').filter(Boolean),
  };
  const mine = await measureTree(current, apns.url);
  const baseline = BASELINE_COMMIT === 'none' ? null : await measureTree(await baselineTree(), apns.url);

  const baselineOf = (row: PerUnit): PerUnit | undefined => baseline?.per_unit.find((b) => b.stage === row.stage);
  const summary: SummaryRow[] = mine.per_unit.map((row) => {
    const goal = goalOf(row);
    const base = baselineOf(row);
    return {
      scenario: 'memory',
      measure: `Redis memory per ${row.stage}`,
      value: row.bytes,
      unit: `bytes/${row.unit}`,
      better: 'lower',
      ceiling: null,
      baseline: base === undefined ? null : { name: BASELINE_NAME, value: base.bytes },
      goal: goal === null ? null : { text: `at most ${goal} bytes`, met: row.bytes <= goal },
    };
  });
  const logsPeak = Math.max(...[mine, ...(baseline === null ? [] : [baseline])].flatMap((t) => [t.empty, ...t.stages.map((st) => st.after)]).map((snap) => snap.consumed_logs.bytes));
  const notes = [
    'Measures: Redis used_memory (INFO memory) after each stage minus before it, over the units the stage wrote, on a redis-server of the run\'s own (`--save "" --appendonly no`) with one `engine start` process (every role, embedded ClickHouse, from the tree\'s sources), less the clients\' query and output buffers (mem_clients_normal, which moves by megabytes with the traffic) and the consumed logs (below). Before each reading every consumer group of every stream has read and acknowledged everything (for the notification in flight: it is `sending` and nothing moves) and DBSIZE and used_memory stayed still for two seconds; each figure is the median of three readings.',
    `Consumed logs: streams every consumer group of which has read and acknowledged everything (ingest, changes, outcomes, ...). Their entries wait for a trim: the apply trims an ingest stream only once it holds more than 512 entries, and trims go by whole nodes, so what they hold depends on where each partition's stream stands, bounded per partition, not per unit (up to ${Math.round(logsPeak / 2 ** 20)} MiB in this run). Each reading deletes them in one Lua script, reads used_memory, and restores them before any client sees them gone; MEMORY USAGE misjudges a stream by 5 to 15%, more than some stages weigh. Streams still being worked on (dispatch jobs, webhook queues) count.`,
    'Breakdown: keys per unit is the DBSIZE delta; bytes by type sums MEMORY USAGE (SAMPLES 0) of every key but the consumed logs by TYPE, which leaves out Redis\'s own overhead (the main dictionary, its expires) and misjudges streams, so it need not add up to the used_memory figure. No key name is read.',
    `Workload: SDK batches (POST /api/sdk/batch) of ${BATCH} operations, ${IN_FLIGHT} in flight: identify with 5 tags and subscribe per user, then a tags operation with 5 more, then a second subscribe, then the events. External ids of 10 characters; IOS_PUSH tokens of 64 hex characters with device_model, device_os and app_version; tags short strings and numbers; events \`purchase\` with two properties and a UUID idempotency_key, spread over the users.`,
    'Webhook events: a notification to ids nobody registered gives one delivery.skipped event each, queued for an endpoint on a closed port (every attempt refused, so it backs off and keeps its queue); read once the endpoint\'s health counts them all queued. The delta includes the notification itself, one for every 20 000 events.',
    'Notification in flight: recipients with one IOS_PUSH subscription each (written and measured first, as a stage of its own), APNs at an HTTP/2 server of the benchmark that takes every stream and never answers, PROVIDER_TIMEOUT_MS=120000 so no attempt ends while it is measured; the delta covers the notification, its fan-out and the jobs waiting or pending in dispatch.',
    baseline === null
      ? 'Baseline: none (BENCH_BASELINE_COMMIT=none).'
      : `Baseline: the same workload against ${BASELINE_NAME} (commit ${baseline.commit}) in a git worktree of it with this tree's node_modules, on a fresh redis-server of its own.`,
  ];
  const report = {
    benchmark: 'memory',
    started_at: started,
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings: { ...settings, batch: BATCH, in_flight: IN_FLIGHT },
    goals: { user_bytes: GOAL_USER_BYTES, idempotent_event_bytes: GOAL_EVENT_BYTES },
    summary,
    trees: baseline === null ? [mine] : [mine, baseline],
    notes,
  };

  const kb = (bytes: number): string => `${Math.round(bytes / 1024)} KiB`;
  const base = (row: PerUnit, pick: (b: PerUnit) => number): string[] => {
    if (baseline === null) return [];
    const b = baselineOf(row);
    return [b === undefined ? '' : String(pick(b))];
  };
  const names = baseline === null ? [] : [BASELINE_NAME];
  printRows([
    ['bytes per unit', ...names, 'this tree', 'goal', ...names.map((n) => `keys/unit ${n}`), 'keys/unit this tree'],
    ...mine.per_unit.map((row) => {
      const goal = goalOf(row);
      return [`${row.stage} (${row.units})`, ...base(row, (b) => b.bytes), String(row.bytes), goal === null ? '' : `<= ${goal}: ${row.bytes <= goal ? 'met' : 'not met'}`, ...base(row, (b) => b.keys), String(row.keys)];
    }),
  ]);
  for (const tree of report.trees) {
    const end = tree.stages[tree.stages.length - 1]?.after ?? tree.empty;
    console.log(`${tree.tree} (${tree.commit}${tree.uncommitted.length > 0 ? `, ${tree.uncommitted.length} engine files uncommitted` : ''}): empty engine ${kb(tree.empty.state_memory)}, ${tree.empty.keys} keys; consumed logs at the end ${end.consumed_logs.entries} entries, ${kb(end.consumed_logs.bytes)}`);
    console.log('  per unit, MEMORY USAGE by key type; the used_memory delta as read (consumed logs and clients in):');
    for (const row of tree.per_unit) {
      const types = Object.entries(row.bytes_by_type).filter(([, v]) => v !== 0).map(([t, v]) => `${t} ${v}`);
      console.log(`    ${row.stage}: ${types.join(', ')}; as read ${row.used_memory_bytes}`);
    }
  }
  for (const note of notes) console.log(`- ${note}`);
  console.log(`report: ${await writeReport(join(root, 'bench/reports'), report)}`);
}

await runBench(
  main,
  async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => log(`memory: cleanup: ${String(err)}`));
    if (existsSync(work)) rmSync(work, { recursive: true, force: true });
  },
  log,
);
