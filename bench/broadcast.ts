/**
 * Broadcast benchmark: how fast one engine process (every role) delivers a push broadcast to N
 * users through the provider simulators (APNs, FCM, Web Push), next to the ceiling measured in
 * the same run: bare clients (bench/apns-ceiling.ts; node:http2 for APNs and FCM, pooled HTTP/1.1
 * with the same encryption for Web Push) sending each type's share of N pushes to its simulator,
 * one type after the other; the ceiling of the mix is N over the sum of their times.
 *
 * `node --import tsx bench/broadcast.ts [--users N] [--types ios,android,web] [--out file] [--audience all|ids]
 *  [--ceiling-count N] [--ceiling-inflight K] [--engine-root DIR] [--cpu-prof DIR]
 *  [--node-flags "FLAGS"] [--dispatch-processes N] [--cluster N] [--peer minimal] [--keep]`
 * (`npm run bench:broadcast -- --users N`).
 *
 * Steps: the provider simulators and the engine (`bin/engine.js start`, the dist/ build when there
 * is one) start as separate processes under a fresh KEY_PREFIX and DATA_DIR; a project is created
 * and the simulators' APNs, FCM and Web Push credentials registered through the `engine` command; N
 * users with one push subscription each, IOS_PUSH, ANDROID_PUSH and WEB_PUSH in rotation over the
 * `--types` (default all three; a Web Push subscription is made by the simulator, which keeps its
 * keys to decrypt), are registered through /api/sdk/batch and the bench waits until they
 * are applied (and, for `--audience all`, mirrored into ClickHouse). Then the ceiling runs, the
 * simulator forgets its provider token (so the engine's newer one is not a 429), and the broadcast
 * is sent and timed from the POST to the moment every delivery record is visible in ClickHouse
 * (GET /api/deliveries/stats); the ceiling runs again after it, and the faster of the two is the
 * one the ratio is over (other work on the host moves both). CPU of the engine, the simulator and Redis is read around both runs
 * (/proc/<pid>/stat, INFO cpu), the engine's RSS every 500 ms. Writes
 * bench/reports/broadcast.json (or --out; bench/report.ts), with its `summary` rows (bench/summary.ts), and
 * prints a table.
 *
 * `--peer minimal` (iOS users only, `--types ios`) sends to bench/h2-peer.ts instead of the APNs
 * simulator: a minimal peer in its own process (cleartext HTTP/2, each distinct token checked once,
 * 200 at once), the project's APNs credentials pointing at it through `base_url`. The ceiling is
 * then a bare node:http2 loop to the same peer (bench/apns-ceiling.ts, one connection, 1 000
 * streams in flight unless --ceiling-connections/--ceiling-inflight say otherwise), and the report
 * sets the engine's pushes/s and CPU per push (engine processes and Redis, accept to recorded)
 * against the loop's, with the CPU per push of every process (the peer's included).
 *
 * `--dispatch-processes N` runs dispatch alone in N more engine processes (`--roles dispatch`);
 * the first one's RSS is then the one sampled (the memory goal is a dispatch process's), and the
 * report gives each one's CPU per push. `--node-flags` go to the engine processes' node (for
 * example `--max-semi-space-size=64`). With REDIS_URL listing the nodes of a Redis Cluster
 * (comma-separated), every process uses the cluster and Redis's CPU is summed over its nodes.
 * `--cluster N` starts a throwaway N-node Redis Cluster (bench/redis-cluster.ts, no replicas, no
 * persistence) and uses it instead of REDIS_URL; it is stopped and its directory removed at the end.
 * With more than one engine process or Redis node, the summary has a CPU per push row for each
 * process (the main one, each dispatch process, Redis summed over its nodes).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Notifications } from '../engine/state/notifications/lifecycle.ts';
import { createRedis } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { androidToken, iosToken } from '../simulators/tokens.ts';
import { cleanupPrefix } from './redis.ts';
import { PrivateCluster } from './redis-cluster.ts';
import { startChild } from './child.ts';
import { threadCpu, threadCpuBetween, type ThreadCpu } from './cpu.ts';
import { sleep, waitFor } from './deployment.ts';
import { reportFile } from './report.ts';
import { runBench } from './run.ts';
import type { SummaryRow } from './summary.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const GOAL_RATIO = 0.6;
const GOAL_RSS_GROWTH_MB = 250;
/** include_external_user_ids holds at most this many ids (schemas/notifications.ts). */
const IDS_PER_NOTIFICATION = 20_000;
const BATCH_OPS = 1000;
const BATCH_PARALLEL = 4;
/** No progress for this long fails the run, ms. */
const STALL_MS = 180_000;

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '200000' },
    types: { type: 'string', default: 'ios,android,web' },
    out: { type: 'string' },
    audience: { type: 'string', default: 'all' },
    'ceiling-count': { type: 'string' },
    'ceiling-connections': { type: 'string' },
    'ceiling-inflight': { type: 'string' },
    'engine-root': { type: 'string', default: root },
    'cpu-prof': { type: 'string' },
    'node-flags': { type: 'string', default: '' },
    'dispatch-processes': { type: 'string', default: '0' },
    cluster: { type: 'string', default: '0' },
    keep: { type: 'boolean', default: false },
    peer: { type: 'string' },
  },
});
const dispatchProcesses = Number(values['dispatch-processes']);
if (!Number.isInteger(dispatchProcesses) || dispatchProcesses < 0) throw new Error(`--dispatch-processes must be a whole number, got ${values['dispatch-processes']}`);
const clusterNodes = Number(values.cluster);
if (!Number.isInteger(clusterNodes) || (clusterNodes !== 0 && clusterNodes < 3)) throw new Error(`--cluster takes a number of nodes, at least 3, got ${values.cluster}`);
const users = Number(values.users);
if (!Number.isInteger(users) || users < 1) throw new Error(`--users must be a whole number, got ${values.users}`);
const audience = values.audience;
if (audience !== 'all' && audience !== 'ids') throw new Error('--audience must be all or ids');
/** The subscription type of each --types name. */
const TYPE_NAMES = { ios: 'IOS_PUSH', android: 'ANDROID_PUSH', web: 'WEB_PUSH' } as const;
type TypeName = keyof typeof TYPE_NAMES;
const isTypeName = (name: string): name is TypeName => Object.hasOwn(TYPE_NAMES, name);
const typeNames = values.types.split(',').map((t) => t.trim());
const types = typeNames.filter(isTypeName);
if (types.length === 0 || types.length !== typeNames.length || new Set(types).size !== types.length) throw new Error(`--types takes distinct names among ios, android, web, got ${values.types}`);
if (values.peer !== undefined && values.peer !== 'minimal') throw new Error(`--peer takes minimal, got ${values.peer}`);
/** Against bench/h2-peer.ts rather than the simulators. */
const peerMode = values.peer === 'minimal';
if (peerMode && (types.length !== 1 || types[0] !== 'ios')) throw new Error('--peer minimal sends APNs pushes only: use --types ios');
const ceilingCount = Number(values['ceiling-count'] ?? users);
/** The goals of --peer minimal: throughput at least this share of the bare loop's, CPU per push at most this multiple. */
const PEER_GOAL_RATIO = 0.8;
const PEER_GOAL_CPU = 2;
const goalRatio = peerMode ? PEER_GOAL_RATIO : GOAL_RATIO;
/** Where the pushes go, as the report names it. */
const providerName = peerMode ? 'peer' : 'simulator';
const engineRoot = resolve(values['engine-root']);
const fromSource = !existsSync(join(engineRoot, 'dist/bin/main.js'));
/** REDIS_URL, or with --cluster the nodes of the cluster started (set in main). */
let redisUrl = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
/** With --cluster: the one this run started, stopped at its end. */
let cluster: PrivateCluster | null = null;
const prefix = `benchbc${Date.now().toString(36)}:`;

const children: ChildProcess[] = [];
let work = '';

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const round = (v: number, digits = 0): number => Math.round(v * 10 ** digits) / 10 ** digits;
/** The push type of user i: the --types in rotation. */
const typeOf = (i: number): TypeName => types[i % types.length] ?? 'ios';
/** The simulator (and credential file) of each push type. */
const PROVIDER_OF = { ios: 'apns', android: 'fcm', web: 'webpush' } as const satisfies Record<TypeName, string>;
/** The engine's HTTP/1.1 pool keeps up to 32 connections per origin (actors/dispatch/providers/http1.ts). */
const WEBPUSH_CONNECTIONS = 32;

interface SubscribeOp {
  op: 'subscribe';
  external_id: string;
  type: (typeof TYPE_NAMES)[TypeName];
  token?: string;
  web_auth?: string;
  web_p256?: string;
}

/** User i's subscribe operation; a web push one gets its endpoint and keys from the simulator. */
function subscribeOp(i: number): SubscribeOp {
  const name = typeOf(i);
  const op: SubscribeOp = { op: 'subscribe', external_id: `u${i}`, type: TYPE_NAMES[name] };
  if (name === 'ios') op.token = iosToken(i);
  if (name === 'android') op.token = androidToken(i);
  return op;
}

// ---- processes -------------------------------------------------------------------------------

function spawnNode(name: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess & { output: () => string } {
  const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
  let output = '';
  const keep = (d: Buffer): void => {
    output = (output + d.toString()).slice(-8000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  proc.once('exit', (code, signal) => {
    if (!stopping) log(`bench: ${name} exited (${code ?? signal})`);
  });
  children.push(proc);
  return Object.assign(proc, { output: () => output });
}

async function stopChild(proc: ChildProcess, ms = 20_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
  await exited;
  clearTimeout(timer);
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** CPU seconds of a process so far (utime + stime of /proc/<pid>/stat). */
async function processCpu(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function redisCpu(nodes: readonly Redis[]): Promise<number> {
  const infos = await Promise.all(nodes.map((node) => node.info('cpu')));
  const value = (info: string, name: string): number => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return infos.reduce((sum, info) => sum + value(info, 'used_cpu_user') + value(info, 'used_cpu_sys'), 0);
}

interface CpuMark {
  at: number;
  engine: number;
  /** The dispatch processes' together, with --dispatch-processes; else 0. */
  dispatch: number;
  /** Each dispatch process's. */
  dispatches: number[];
  simulator: number;
  redis: number;
}

async function cpuMark(enginePid: number, simPid: number, redis: readonly Redis[], dispatchPids: readonly number[]): Promise<CpuMark> {
  const [engine, simulator, r, dispatches] = await Promise.all([processCpu(enginePid), processCpu(simPid), redisCpu(redis), Promise.all(dispatchPids.map(processCpu))]);
  return { at: Date.now(), engine, dispatch: dispatches.reduce((a, b) => a + b, 0), dispatches, simulator, redis: r };
}

// ---- HTTP ------------------------------------------------------------------------------------

async function call(url: string, method: string, key: string | null, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: res.status, body: text };
  }
}

/** POST /__sim/reset on the APNs simulator (HTTP/2 only): forgets the provider token in force. */
async function resetApns(url: string, ca: Buffer): Promise<void> {
  const session = http2.connect(url, { ca });
  try {
    await new Promise<void>((ok, fail) => {
      const stream = session.request({ ':method': 'POST', ':path': '/__sim/reset' });
      stream.on('response', (h) => (Number(h[':status']) === 204 ? ok() : fail(new Error(`reset answered ${h[':status']}`))));
      stream.on('error', fail);
      stream.resume();
      stream.end();
    });
  } finally {
    session.close();
  }
}

interface PeerCount {
  pushes: number;
  distinct: number;
  duplicates: number;
  sessions: number;
}

/** One request to bench/h2-peer.ts (cleartext HTTP/2): its answer's body. */
async function peerCall(url: string, method: string, path: string): Promise<string> {
  const session = http2.connect(url);
  try {
    return await new Promise<string>((ok, fail) => {
      const stream = session.request({ ':method': method, ':path': path });
      let body = '';
      stream.setEncoding('utf8');
      stream.on('data', (d: string) => (body += d));
      stream.on('end', () => ok(body));
      stream.on('error', fail);
      stream.end();
    });
  } finally {
    session.close();
  }
}

const peerCount = async (url: string): Promise<PeerCount> => JSON.parse(await peerCall(url, 'GET', '/count')) as PeerCount;

// ---- the run ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const startedAt = new Date();
  work = await mkdtemp(join(tmpdir(), 'svc-bench-broadcast-'));
  const simDir = join(work, 'sims');
  if (clusterNodes > 0) {
    // Held before launch so an interrupt while it starts still stops it (cleanup).
    // Redis's default node timeout: the tests' 2 s could fail a node of a loaded 2-core host mid-run.
    cluster = await PrivateCluster.create({ primaries: clusterNodes, nodeTimeoutMs: 15_000 });
    await cluster.launch();
    redisUrl = cluster.url;
    log(`bench: a ${clusterNodes}-node Redis Cluster on ports ${cluster.ports.join(', ')}, in ${cluster.dir}`);
  }
  /** The Redis nodes, one for a single Redis, every node for a cluster (CPU is read from each). */
  const redisNodes = redisUrl.split(',');
  const redis = redisNodes.map((url) => new Redis(url, { maxRetriesPerRequest: 2 }));
  log(`bench: ${users} users, audience ${audience}, engine ${fromSource ? 'from source (tsx)' : 'dist/ build'} in ${engineRoot}, work dir ${work}`);

  // 1. Simulators.
  const sims = spawnNode('simulators', ['--import', 'tsx', join(root, 'simulators/main.ts'), '--out', simDir, '--fresh'], process.env);
  await waitFor('the simulators', async () => (sims.output().includes('provider simulators running') ? true : undefined), 30_000);
  const simInfo = JSON.parse(await readFile(join(simDir, 'simulators.json'), 'utf8')) as { caFile: string; urls: Record<string, string> };
  const apnsUrl = simInfo.urls['apns'] ?? '';
  const ca = await readFile(simInfo.caFile);
  // With --peer minimal, the APNs credentials (the simulator's key and topic) point at the peer.
  const peer = peerMode ? await startChild('h2 peer', ['--import', 'tsx', join(root, 'bench/h2-peer.ts')], {}, { timeoutMs: 30_000 }) : null;
  if (peer) children.push(peer.proc);
  const peerUrl = peer ? `http://127.0.0.1:${peer.port}` : '';
  const apnsCreds = peer ? join(work, 'apns-peer.json') : join(simDir, 'apns.json');
  if (peer) await writeFile(apnsCreds, JSON.stringify({ ...(JSON.parse(await readFile(join(simDir, 'apns.json'), 'utf8')) as object), base_url: peerUrl }));
  /** Before a sender starts: the simulator forgets the provider token in force (so a newer one is not a 429), the peer its counts. */
  const forget = async (): Promise<void> => {
    if (peer) await peerCall(peerUrl, 'POST', '/reset');
    else await resetApns(apnsUrl, ca);
  };

  // 2. Engine: project and credentials through the CLI, then `engine start`.
  const port = await freePort();
  const engineEnv: NodeJS.ProcessEnv = {
    ...process.env,
    KEY_PREFIX: prefix,
    DATA_DIR: join(work, 'data'),
    PORT: String(port),
    PROVIDER_CA_FILE: simInfo.caFile,
    OUTBOUND_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
    REDIS_URL: redisUrl,
  };
  if (fromSource) engineEnv['ENGINE_FROM_SOURCE'] = '1';
  else delete engineEnv['ENGINE_FROM_SOURCE'];
  const engineBin = join(engineRoot, 'bin/engine.js');
  const cli = async (...args: string[]): Promise<string> => (await promisify(execFile)(process.execPath, [engineBin, ...args], { env: engineEnv, cwd: root })).stdout;
  const project = JSON.parse(await cli('project', 'create', 'bench-broadcast', '--json')) as { project_id: string; sdk_key: string; rest_key: string };
  for (const provider of ['apns', 'fcm', 'webpush']) await cli('providers', 'set', project.project_id, provider, '--file', provider === 'apns' ? apnsCreds : join(simDir, `${provider}.json`));
  const profArgs = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${resolve(values['cpu-prof'])}`] : [];
  const nodeFlags = values['node-flags'].split(' ').filter(Boolean);
  const split = dispatchProcesses > 0;
  const engine = spawnNode('engine', [...nodeFlags, ...profArgs, engineBin, 'start', ...(split ? ['--roles', 'gateway,apply,fanout,recorder,scheduler'] : [])], engineEnv);
  // With --dispatch-processes, dispatch runs alone in processes of its own; the first one's memory is the goal's.
  const dispatchers = Array.from({ length: dispatchProcesses }, (_, i) => spawnNode(`dispatch ${i + 1}`, [...nodeFlags, engineBin, 'start', '--roles', 'dispatch'], engineEnv));
  const base = `http://127.0.0.1:${port}`;
  await waitFor('the engine', async () => ((await call(`${base}/readyz`, 'GET', null)).status === 200 ? true : undefined), 120_000);
  const enginePid = engine.pid ?? 0;
  const dispatchPids = dispatchers.map((d) => d.pid ?? 0);
  /** The process whose memory growth the goal is about: the first dispatch process, or the one engine. */
  const memoryPid = dispatchPids[0] ?? enginePid;
  /** The process the pushes go to: the simulators', or the peer's. */
  const simPid = (peer ? peer.proc.pid : sims.pid) ?? 0;
  log(`bench: engine pid ${enginePid} on ${base}, ${peer ? 'h2 peer' : 'simulators'} pid ${simPid}${peer ? ` on ${peerUrl}` : ''}, project ${project.project_id}`);

  // 3. Users: N subscribes (a user is created by its first write), 1000 ops per batch call. A web
  // push user's endpoint and keys come from the simulator (POST /__sim/subscriptions), which keeps
  // the private key to decrypt what the engine sends.
  const webpushSim = new Pool(simInfo.urls['webpush'] ?? '', { connect: { ca }, connections: 8 });
  const webSubscription = async (): Promise<{ token: string; web_auth: string; web_p256: string }> => {
    const answer = await webpushSim.request({ method: 'POST', path: '/__sim/subscriptions' });
    if (answer.statusCode !== 201) throw new Error(`web push simulator answered ${answer.statusCode} to POST /__sim/subscriptions`);
    return (await answer.body.json()) as { token: string; web_auth: string; web_p256: string };
  };
  const regStart = Date.now();
  let sentUsers = 0;
  const calls = Math.ceil(users / BATCH_OPS);
  let nextCall = 0;
  await Promise.all(
    Array.from({ length: BATCH_PARALLEL }, async () => {
      for (let c = nextCall++; c < calls; c = nextCall++) {
        const operations = [];
        for (let i = c * BATCH_OPS; i < Math.min(users, (c + 1) * BATCH_OPS); i++) operations.push(subscribeOp(i));
        await Promise.all(operations.map(async (op) => (op.type === 'WEB_PUSH' ? Object.assign(op, await webSubscription()) : op)));
        const answer = await call(`${base}/api/sdk/batch`, 'POST', project.sdk_key, { operations });
        if (answer.status !== 202) throw new Error(`batch answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
        sentUsers += operations.length;
        if (c % 50 === 0) log(`bench: registering ${sentUsers}/${users} users`);
      }
    }),
  );
  const acceptedAt = Date.now();
  await sleep(1000); // the lag gauge is refreshed periodically: do not read a value from before the writes
  await waitFor(
    'every write applied',
    async () => {
      const metrics = (await call(`${base}/metrics`, 'GET', null)).body as string;
      const lag = /svc_ingest_lag_entries (\d+)/.exec(metrics)?.[1];
      if (lag !== '0') log(`bench: ingest lag ${lag ?? '?'} entries`);
      return lag === '0' ? true : undefined;
    },
    30 * 60_000,
    2000,
  );
  const appliedAt = Date.now();
  if (audience === 'all') {
    await waitFor(
      'the users mirror in ClickHouse',
      async () => {
        const answer = await call(`${base}/api/segments/All/count`, 'GET', project.rest_key);
        const count = (answer.body as { count?: number }).count ?? -1;
        log(`bench: segment All counts ${count}/${users}`);
        return count >= users ? true : undefined;
      },
      30 * 60_000,
      2000,
    );
  }
  await webpushSim.close();
  const registration = {
    users,
    by_type: Object.fromEntries(types.map((t, k) => [TYPE_NAMES[t], Math.floor(users / types.length) + (k < users % types.length ? 1 : 0)])),
    accept_seconds: round((acceptedAt - regStart) / 1000, 1),
    applied_seconds: round((appliedAt - regStart) / 1000, 1),
    mirrored_seconds: audience === 'all' ? round((Date.now() - regStart) / 1000, 1) : null,
  };
  log(`bench: ${users} users registered: accepted in ${registration.accept_seconds} s, applied in ${registration.applied_seconds} s${registration.mirrored_seconds === null ? '' : `, in ClickHouse in ${registration.mirrored_seconds} s`}`);

  // 4. Ceiling: a bare HTTP/2 client in its own process, same simulator, before and after the
  // engine's run (other work on the host moves the figures; the faster of the two is the ceiling).
  const runCeilingOf = async (name: TypeName, count: number) => {
    const provider = PROVIDER_OF[name];
    log(`bench: ceiling of ${TYPE_NAMES[name]}: ${count} pushes from a bare client to the ${peer ? 'h2 peer' : `${provider} simulator`}`);
    if (peer) await forget();
    const c0 = await cpuMark(enginePid, simPid, redis, dispatchPids);
    const connections = provider === 'webpush' ? String(WEBPUSH_CONNECTIONS) : (values['ceiling-connections'] ?? (peer ? '1' : '4'));
    const creds = provider === 'apns' ? apnsCreds : join(simDir, `${provider}.json`);
    const ceilingArgs = ['--import', 'tsx', join(root, 'bench/apns-ceiling.ts'), '--provider', provider, '--creds', creds, ...(peer ? [] : ['--ca', simInfo.caFile]), '--count', String(count), '--connections', connections];
    if (provider === 'webpush') ceilingArgs.push('--subscription', join(simDir, 'webpush-subscription.json'));
    const inflight = values['ceiling-inflight'] ?? (peer ? '1000' : undefined);
    if (inflight) ceilingArgs.push('--inflight', inflight);
    const ceilingProc = spawnNode('ceiling', ceilingArgs, process.env);
    const done = await new Promise<Record<string, unknown>>((ok, fail) => {
      let buffered = '';
      let last: Record<string, unknown> | null = null;
      ceilingProc.stdout?.on('data', (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry['msg'] === 'progress') log(`bench: ceiling ${String(entry['answered'])}/${count} pushes, ${String(entry['per_sec'])}/s`);
          if (entry['msg'] === 'done') last = entry;
        }
      });
      ceilingProc.once('exit', (code) => (last ? ok(last) : fail(new Error(`ceiling exited with ${code}: ${ceilingProc.output().slice(-1000)}`))));
    });
    const c1 = await cpuMark(enginePid, simPid, redis, dispatchPids);
    const peerSaw = peer ? await peerCount(peerUrl) : null;
    // The simulator forgets the token in force, so the next sender's newer token is not a 429.
    if (provider === 'apns' && !peer) await forget();
    return {
      pushes: Number(done['pushes']),
      seconds: Number(done['seconds']),
      pushes_per_sec: Number(done['per_sec']),
      statuses: done['statuses'],
      connections: done['connections'],
      inflight: done['inflight'],
      peer_max_streams: done['peer_max_streams'],
      cpu_seconds: { client: Number(done['cpu_seconds']), simulator: c1.simulator - c0.simulator, redis: c1.redis - c0.redis },
      ...(peerSaw ? { peer: peerSaw } : {}),
    };
  };
  // Each type's share of the pushes at that type's own pace, one type after the other: the
  // simulators share one process, so the mix's ceiling is its pushes over the sum of the times.
  const runCeiling = async (when: 'before' | 'after'): Promise<Ceiling> => {
    const byType: Record<string, Awaited<ReturnType<typeof runCeilingOf>>> = {};
    for (const [k, name] of types.entries()) {
      const count = Math.floor(ceilingCount / types.length) + (k < ceilingCount % types.length ? 1 : 0);
      if (count > 0) byType[TYPE_NAMES[name]] = await runCeilingOf(name, count);
    }
    const runs = Object.values(byType);
    const sum = (f: (r: (typeof runs)[number]) => number): number => runs.reduce((n, r) => n + f(r), 0);
    const pushes = sum((r) => r.pushes);
    const seconds = sum((r) => r.seconds);
    const ceiling: Ceiling = {
      when,
      pushes,
      seconds: round(seconds, 3),
      pushes_per_sec: Math.round(pushes / seconds),
      by_type: byType,
      cpu_us_per_push: {
        client: round((sum((r) => r.cpu_seconds.client) / pushes) * 1e6, 1),
        [providerName]: round((sum((r) => r.cpu_seconds.simulator) / pushes) * 1e6, 1),
        redis: round((sum((r) => r.cpu_seconds.redis) / pushes) * 1e6, 1),
      },
      /** The machine's 1-minute load average at the end: other work on the host shows here. */
      load_average: round(loadavg()[0] ?? 0, 1),
    };
    log(`bench: ceiling ${ceiling.pushes_per_sec} pushes/s (${Object.entries(byType).map(([t, r]) => `${t} ${r.pushes_per_sec}/s`).join(', ')})`);
    await sleep(2000);
    return ceiling;
  };
  const before = await runCeiling('before');

  // 5. The broadcast.
  const rss: { at: number; mb: number }[] = [];
  const baselineSamples: number[] = [];
  for (let i = 0; i < 4; i++) {
    baselineSamples.push(await rssMb(memoryPid));
    await sleep(500);
  }
  const baselineRss = Math.max(...baselineSamples);
  const sampler = setInterval(() => {
    rssMb(memoryPid).then((mb) => rss.push({ at: Date.now(), mb }), () => undefined);
  }, 500);
  const content = {
    headings: { en: 'Hello' },
    contents: { en: 'Your order shipped' },
    data: { order: 'A1' },
    priority: 'normal',
    collapse_id: 'orders',
    ttl: 3600,
  };
  if (peer) await forget();
  const threads0 = await threadCpu(enginePid);
  const m0 = await cpuMark(enginePid, simPid, redis, dispatchPids);
  const t0 = m0.at;
  const since = new Date(t0 - 1000).toISOString();
  const notifications: { id: string; recipients: number }[] = [];
  const bodies =
    audience === 'all'
      ? [{ ...content, included_segments: ['All'] }]
      : Array.from({ length: Math.ceil(users / IDS_PER_NOTIFICATION) }, (_, n) => ({
          ...content,
          include_external_user_ids: Array.from({ length: Math.min(IDS_PER_NOTIFICATION, users - n * IDS_PER_NOTIFICATION) }, (_, i) => `u${n * IDS_PER_NOTIFICATION + i}`),
        }));
  for (const body of bodies) {
    const answer = await call(`${base}/api/notifications`, 'POST', project.rest_key, body);
    if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    notifications.push(answer.body as { id: string; recipients: number });
  }
  const acceptMs = Date.now() - t0;
  const expected = notifications.reduce((n, x) => n + x.recipients, 0);
  log(`bench: ${notifications.length} notification(s) accepted in ${acceptMs} ms, ${expected} recipients`);

  let sent = 0;
  let failed = 0;
  let skipped = 0;
  let recorded = 0;
  let groups: Record<string, number> = {};
  let dispatchedAt: number | null = null;
  /** When fan-out had appended every job (the record's `fanned`), read from Redis. */
  let fannedAt: number | null = null;
  let appended = 0;
  const config = loadConfig({ REDIS_URL: redisUrl, KEY_PREFIX: prefix, PARTITIONS: process.env['PARTITIONS'] ?? '64' });
  const scripted = createRedis(config);
  const lifecycle = new Notifications(scripted, new Topology(prefix, config.PARTITIONS));
  const open = new Set(notifications.map((n) => n.id));
  const counts = new Map<string, { sent: number; failed: number; skipped: number }>();
  let lastChange = Date.now();
  let lastPrint = 0;
  let m1: CpuMark | null = null;
  let threads1: ThreadCpu = new Map();
  /** What the peer got, read once every delivery was recorded. */
  let peerSaw: PeerCount | null = null;
  for (;;) {
    for (const id of [...open]) {
      const view = (await call(`${base}/api/notifications/${id}`, 'GET', project.rest_key)).body as { status: string; counts: { sent: number; failed: number; skipped: number } };
      counts.set(id, view.counts);
      if (view.status === 'completed') open.delete(id);
    }
    const before = sent + failed + skipped + recorded;
    sent = [...counts.values()].reduce((n, c) => n + c.sent, 0);
    failed = [...counts.values()].reduce((n, c) => n + c.failed, 0);
    skipped = [...counts.values()].reduce((n, c) => n + c.skipped, 0);
    if (open.size === 0 && dispatchedAt === null) dispatchedAt = Date.now();
    if (fannedAt === null) {
      const records = await Promise.all(notifications.map(async (n) => ({ record: await lifecycle.read(n.id), counts: await lifecycle.counts(n.id) })));
      appended = records.reduce((sum, r) => sum + r.counts.jobs, 0);
      if (records.every((r) => r.record?.fanned === true)) fannedAt = Date.now();
    }
    const stats = await call(`${base}/api/deliveries/stats?group_by=status&since=${encodeURIComponent(since)}`, 'GET', project.rest_key);
    if (stats.status === 200) {
      groups = Object.fromEntries((stats.body as { groups: { key: string | null; count: number }[] }).groups.map((g) => [g.key ?? 'null', g.count]));
      recorded = Object.values(groups).reduce((a, b) => a + b, 0);
    }
    const now = Date.now();
    if (sent + failed + skipped + recorded !== before) lastChange = now;
    if (recorded >= expected && m1 === null) {
      m1 = await cpuMark(enginePid, simPid, redis, dispatchPids);
      threads1 = await threadCpu(enginePid);
      if (peer) peerSaw = await peerCount(peerUrl);
    }
    if (m1 !== null && dispatchedAt !== null) break;
    if (now - lastChange > STALL_MS) throw new Error(`no progress for ${STALL_MS / 1000} s: sent ${sent}, failed ${failed}, skipped ${skipped}, recorded ${recorded}/${expected}`);
    if (now - lastPrint >= 2000) {
      lastPrint = now;
      const seconds = (now - t0) / 1000;
      const peak = Math.max(baselineRss, ...rss.map((s) => s.mb));
      log(
        `bench: ${seconds.toFixed(0)} s: fanned out ${fannedAt === null ? appended : 'all'}, sent ${sent} failed ${failed} skipped ${skipped} (${Math.round((sent + failed + skipped) / seconds)}/s), recorded ${recorded}/${expected}, ${split ? 'dispatch' : 'engine'} RSS ${Math.round(rss.at(-1)?.mb ?? 0)} MB (peak ${Math.round(peak)})`,
      );
    }
    await sleep(500);
  }
  clearInterval(sampler);
  scripted.disconnect();
  const end = m1;
  const wall = (end.at - t0) / 1000;
  const peakRss = Math.max(baselineRss, ...rss.filter((s) => s.at <= end.at + 1000).map((s) => s.mb));
  const perDelivery = (seconds: number): number => round((seconds / expected) * 1e6, 1);
  const deliveriesPerSec = expected / wall;
  const result = {
    notifications: notifications.map((n) => n.id),
    recipients: expected,
    accept_ms: acceptMs,
    /** From the POST until fan-out had appended every job (seen within about a second). */
    fanned_seconds: fannedAt === null ? null : round((fannedAt - t0) / 1000, 2),
    /** From the POST until every notification was `completed` (Redis counters). */
    dispatched_seconds: round(((dispatchedAt ?? end.at) - t0) / 1000, 2),
    /** From the POST until every delivery record was visible in ClickHouse. */
    recorded_seconds: round(wall, 2),
    deliveries_per_sec: Math.round(deliveriesPerSec),
    sends_per_sec: Math.round(expected / (((dispatchedAt ?? end.at) - t0) / 1000)),
    /** Over the faster of the two ceilings (set below). */
    ratio_to_ceiling: 0,
    counts: { sent, failed, skipped },
    recorded_by_status: groups,
    /** engine: every engine process together (with --dispatch-processes, `dispatch` is their share). */
    cpu_us_per_delivery: {
      engine: perDelivery(end.engine - m0.engine + end.dispatch - m0.dispatch),
      ...(split ? { engine_main: perDelivery(end.engine - m0.engine), dispatch: perDelivery(end.dispatch - m0.dispatch) } : {}),
      [providerName]: perDelivery(end.simulator - m0.simulator),
      redis: perDelivery(end.redis - m0.redis),
    },
    /** Every engine process and Redis: the engine's whole cost per push, accept to recorded. */
    cpu_us_per_delivery_engine_and_redis: perDelivery(end.engine - m0.engine + end.dispatch - m0.dispatch + end.redis - m0.redis),
    cores: {
      engine: round((end.engine - m0.engine + end.dispatch - m0.dispatch) / wall, 2),
      [providerName]: round((end.simulator - m0.simulator) / wall, 2),
      redis: round((end.redis - m0.redis) / wall, 2),
    },
    /** With --peer minimal: what the peer got (pushes, distinct tokens, repeats, connections opened). */
    peer: peerSaw,
    /** The engine's CPU seconds over the measured interval by thread name (node's main thread is `node`). */
    engine_threads_cpu_seconds: Object.fromEntries(
      Object.entries(threadCpuBetween(threads0, threads1))
        .map(([name, v]) => [name, round(v, 2)] as const)
        .filter(([, v]) => v >= 0.05),
    ),
    /** Each dispatch process's CPU per push and cores, with --dispatch-processes. */
    dispatch_processes: end.dispatches.map((cpu, i) => ({
      cpu_us_per_delivery: perDelivery(cpu - (m0.dispatches[i] ?? 0)),
      cores: round((cpu - (m0.dispatches[i] ?? 0)) / wall, 2),
    })),
    /** Redis: the nodes it ran on (one, or a cluster's). */
    redis_nodes: redisNodes.length,
    /** Of the first dispatch process with --dispatch-processes, else of the one engine process. */
    rss_process: split ? 'dispatch' : 'engine',
    rss_mb: { baseline: round(baselineRss, 1), peak: round(peakRss, 1), growth: round(peakRss - baselineRss, 1), samples: rss.length },
    rss_growth_bytes_per_user: Math.round(((peakRss - baselineRss) * 1024 * 1024) / expected),
    load_average: round(loadavg()[0] ?? 0, 1),
  };

  if (!peer) await forget();
  const after = await runCeiling('after');
  const ceiling = after.pushes_per_sec > before.pushes_per_sec ? after : before;
  result.ratio_to_ceiling = round(deliveriesPerSec / ceiling.pushes_per_sec, 3);
  const mix = types.map((t) => TYPE_NAMES[t]).join(', ');
  const inflight = values['ceiling-inflight'] ?? '1000';
  const ceilingName = peer ? `bare node:http2 loop, ${inflight} streams in flight` : `bare client per provider, ${mix} at their own pace`;
  /** With --peer minimal: the engine's CPU per push (its processes and Redis) over the bare loop's own, in the run whose CPU per push was lower. */
  const bareCpu = Math.min(...[before, after].map((c) => c.cpu_us_per_push.client));
  const cpuRatio = round(result.cpu_us_per_delivery_engine_and_redis / bareCpu, 2);
  /** How the run is spread, for the measures: empty for one engine process on one Redis. */
  const deployment = [
    ...(split ? [`dispatch over ${dispatchProcesses} process${dispatchProcesses === 1 ? '' : 'es'}`] : []),
    ...(redisNodes.length > 1 ? [`${redisNodes.length}-node Redis Cluster`] : []),
  ].join(', ');
  const spread = deployment === '' ? '' : `, ${deployment}`;
  const goals = peer ? { ratio_to_ceiling: PEER_GOAL_RATIO, cpu_ratio_to_ceiling: PEER_GOAL_CPU, rss_growth_mb: GOAL_RSS_GROWTH_MB } : { ratio_to_ceiling: GOAL_RATIO, rss_growth_mb: GOAL_RSS_GROWTH_MB };
  const throughputRow: SummaryRow = peer
    ? {
        scenario: 'broadcast',
        measure: `broadcast to ${users} iOS users against a minimal HTTP/2 peer, accept to last record in ClickHouse${spread}`,
        value: result.deliveries_per_sec,
        unit: 'pushes/s',
        better: 'higher',
        ceiling: { name: ceilingName, value: ceiling.pushes_per_sec },
        baseline: null,
        goal: { text: `at least ${PEER_GOAL_RATIO} of a bare node:http2 loop`, met: result.ratio_to_ceiling >= PEER_GOAL_RATIO },
      }
    : {
        scenario: 'broadcast',
        measure: `broadcast to ${users} users (${mix}), accept to last record in ClickHouse${spread}`,
        value: result.deliveries_per_sec,
        unit: 'pushes/s',
        better: 'higher',
        ceiling: { name: ceilingName, value: ceiling.pushes_per_sec },
        baseline: null,
        goal: { text: `at least ${GOAL_RATIO * 100}% of the ceiling`, met: result.ratio_to_ceiling >= GOAL_RATIO },
      };
  const cpuRow: SummaryRow[] = peer
    ? [
        {
          scenario: 'broadcast',
          measure: `CPU per push, engine processes and Redis, accept to recorded, ${users} iOS users against a minimal HTTP/2 peer${spread}`,
          value: result.cpu_us_per_delivery_engine_and_redis,
          unit: 'µs/push',
          better: 'lower',
          ceiling: { name: 'bare node:http2 loop', value: bareCpu },
          baseline: null,
          goal: { text: `CPU per push at most ${PEER_GOAL_CPU}x the bare loop's`, met: cpuRatio <= PEER_GOAL_CPU },
        },
      ]
    : [];
  // Spread over processes or nodes, each one's cost is its own row: where the added cost lands.
  const audienceText = peer ? `${users} iOS users against a minimal HTTP/2 peer` : `${users} users (${mix})`;
  const processCpuRow = (who: string, value: number): SummaryRow => ({
    scenario: 'broadcast',
    measure: `CPU per push, ${who}, accept to recorded, ${audienceText}${spread}`,
    value,
    unit: 'µs/push',
    better: 'lower',
    ceiling: null,
    baseline: null,
    goal: null,
  });
  const processRows: SummaryRow[] =
    deployment === ''
      ? []
      : [
          processCpuRow(split ? 'main engine process (every role but dispatch)' : 'engine process', split ? perDelivery(end.engine - m0.engine) : result.cpu_us_per_delivery.engine),
          ...result.dispatch_processes.map((d, i) => processCpuRow(`dispatch process ${i + 1} of ${dispatchProcesses}`, d.cpu_us_per_delivery)),
          processCpuRow(redisNodes.length > 1 ? `Redis, ${redisNodes.length} nodes summed` : 'Redis', result.cpu_us_per_delivery.redis),
        ];
  const summary: SummaryRow[] = [
    throughputRow,
    ...cpuRow,
    ...processRows,
    {
      scenario: 'broadcast',
      measure: `${result.rss_process} process RSS growth, broadcast to ${users} users (${mix})`,
      value: result.rss_mb.growth,
      unit: 'MB',
      better: 'lower',
      ceiling: null,
      baseline: null,
      goal: users >= 1_000_000 ? { text: `under ${GOAL_RSS_GROWTH_MB} MB at 1M users`, met: result.rss_mb.growth < GOAL_RSS_GROWTH_MB } : null,
    },
  ];

  const report = {
    benchmark: 'broadcast',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', memory_gb: round(totalmem() / 2 ** 30, 1), node: process.version },
    settings: {
      users,
      types: mix,
      audience,
      engine: fromSource ? 'source (ENGINE_FROM_SOURCE=1)' : 'dist/ build',
      engine_root: engineRoot,
      ceiling_count: ceilingCount,
      cpu_prof: values['cpu-prof'] ?? null,
      node_flags: values['node-flags'],
      dispatch_processes: dispatchProcesses,
      redis_nodes: redisNodes.length,
      peer: values.peer ?? null,
    },
    goals,
    ...(peer ? { cpu_ratio_to_ceiling: cpuRatio } : {}),
    summary,
    registration,
    /** The faster of the two ceiling runs: what the ratio is over. */
    ceiling,
    ceilings: [before, after],
    engine: result,
    notes: [
      ...(peer
        ? [
            `Peer: bench/h2-peer.ts in its own process, cleartext HTTP/2 (prior knowledge, SETTINGS_MAX_CONCURRENT_STREAMS 1000), each POST /3/device/<token> checked once against the set of tokens seen and answered 200 with an apns-id; no JWT check. The engine reaches it through the APNs credentials' base_url (the simulator's key and topic). The ceiling is bench/apns-ceiling.ts against the same peer: one ES256 token signed once, the engine's headers, ${inflight} streams in flight, reset before each run.`,
            'CPU ratio: the engine processes and Redis over the measured interval per push, over the bare loop process\'s own CPU per push (the lower of its two runs); the peer is left out of both and shown on its own.',
          ]
        : []),
      `Measures: ${split ? `${dispatchProcesses + 1} engine processes, dispatch alone in ${dispatchProcesses} and every other role (gateway, apply, fanout, recorder with embedded ClickHouse, scheduler) in the other` : 'one engine process with every role (gateway, apply, fanout, dispatch, recorder with embedded ClickHouse, scheduler)'}, from the POST /api/notifications until every delivery record is visible through GET /api/deliveries/stats.`,
      'Ceiling: bench/apns-ceiling.ts in its own process, once per push type, sending that type\'s share of the pushes to the same simulator with the engine\'s request shape: APNs and FCM over node:http2 (same TLS, ES256 token or one OAuth access token, as many streams in flight as the engine pool can use: 4 connections x the peer limit), Web Push over 32 pooled HTTP/1.1 connections, each push encrypted and VAPID-signed by web-push as the engine does (all to one subscription). The types run one after the other; the ceiling is the pushes over the sum of their times (the simulators share one process, so running them at once would not be faster).',
      `Push types: ${mix} in rotation, one subscription per user (a Web Push one made by the simulator, which decrypts every push).`,
      `Audience: ${audience === 'all' ? 'segment All (one notification; fan-out reads the users mirror in ClickHouse, which the bench waits to be filled)' : `include_external_user_ids, ${bodies.length} notifications of at most ${IDS_PER_NOTIFICATION} ids`}.`,
      'CPU per delivery: CPU seconds of each process over the measured interval divided by the deliveries; the simulator and Redis figures include everything they did meanwhile (the recorder and the progress polls included).',
      `Machine: ${cpus().length} cores shared by the simulators, the engine, Redis, the ceiling client, this process and whatever else runs on the host (load_average, 1 minute, at the end of each run).`,
    ],
  };
  printTable(report);
  if (split) console.log(`main engine process: ${result.cpu_us_per_delivery['engine_main'] ?? ''} µs CPU per push`);
  result.dispatch_processes.forEach((d, i) => console.log(`dispatch process ${i + 1}: ${d.cpu_us_per_delivery} µs CPU per push, ${d.cores} cores`));
  if (redisNodes.length > 1) console.log(`Redis, ${redisNodes.length} nodes summed: ${result.cpu_us_per_delivery.redis} µs CPU per push`);
  const file = values.out ? resolve(values.out) : reportFile(join(root, 'bench/reports'), 'broadcast');
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`bench: report written to ${file}`);
  for (const node of redis) node.disconnect();
}

interface Ceiling {
  when: string;
  pushes: number;
  /** The sum of the types' runs. */
  seconds: number;
  pushes_per_sec: number;
  /** Each type's run: its share of the pushes at its own pace. */
  by_type: Record<string, { pushes: number; seconds: number; pushes_per_sec: number }>;
  load_average: number;
  /** client, redis, and the simulator's or the peer's. */
  cpu_us_per_push: Record<string, number> & { client: number; redis: number };
}

function printTable(report: {
  cpu_ratio_to_ceiling?: number;
  ceiling: Ceiling;
  ceilings: Ceiling[];
  engine: {
    recipients: number;
    recorded_seconds: number;
    deliveries_per_sec: number;
    ratio_to_ceiling: number;
    cpu_us_per_delivery: Record<string, number> & { engine: number; redis: number };
    cpu_us_per_delivery_engine_and_redis: number;
    rss_process: string;
    rss_mb: { baseline: number; peak: number; growth: number };
    rss_growth_bytes_per_user: number;
    load_average: number;
  };
}): void {
  const { ceiling, ceilings, engine: e } = report;
  const rows = [
    ['run', 'pushes', 'seconds', 'per second', 'vs ceiling', 'CPU µs/push: sender', providerName, 'redis', 'load avg'],
    ...ceilings.map((c) => [
      `ceiling ${c.when} (bare clients)${c === ceiling ? ' *' : ''}`,
      String(c.pushes),
      String(c.seconds),
      String(c.pushes_per_sec),
      '',
      String(c.cpu_us_per_push.client),
      String(c.cpu_us_per_push[providerName] ?? ''),
      String(c.cpu_us_per_push.redis),
      String(c.load_average),
    ]),
    [
      'engine (to ClickHouse)',
      String(e.recipients),
      String(e.recorded_seconds),
      String(e.deliveries_per_sec),
      `${Math.round(e.ratio_to_ceiling * 100)}% (goal ${goalRatio * 100}%: ${e.ratio_to_ceiling >= goalRatio ? 'met' : 'not met'})`,
      String(e.cpu_us_per_delivery.engine),
      String(e.cpu_us_per_delivery[providerName] ?? ''),
      String(e.cpu_us_per_delivery.redis),
      String(e.load_average),
    ],
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  console.log('');
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
  console.log('');
  console.log('* the faster ceiling, which the ratio is over; load avg: the host\'s 1-minute load average at the end of the run');
  const cpuRatio = report.cpu_ratio_to_ceiling;
  if (cpuRatio !== undefined) {
    console.log(
      `CPU per push, engine processes and Redis: ${e.cpu_us_per_delivery_engine_and_redis} µs, ${cpuRatio}x the bare loop's (goal at most ${PEER_GOAL_CPU}x: ${cpuRatio <= PEER_GOAL_CPU ? 'met' : 'not met'})`,
    );
  }
  console.log(
    `${e.rss_process} process RSS: ${e.rss_mb.baseline} MB before, peak ${e.rss_mb.peak} MB, growth ${e.rss_mb.growth} MB (${e.rss_growth_bytes_per_user} bytes/user; goal < ${GOAL_RSS_GROWTH_MB} MB at 1M users)`,
  );
}

let stopping = false;
async function cleanup(): Promise<void> {
  stopping = true;
  // The engine first (its profile, when asked, is written as it exits), then the simulators.
  for (const proc of [...children].reverse()) await stopChild(proc);
  // A cluster of the run's own goes whole, its keys with it.
  if (cluster) await cluster.stop();
  else await cleanupPrefix(prefix, redisUrl).catch((err: unknown) => log(`bench: cleanup of ${prefix}* failed: ${String(err)}`));
  if (work && !values.keep) await rm(work, { recursive: true, force: true });
}

await runBench(main, cleanup, log);
