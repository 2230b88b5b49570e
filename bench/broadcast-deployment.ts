/**
 * What bench/broadcast.ts measures, each part in a process of its own under a fresh KEY_PREFIX
 * and DATA_DIR: Redis (REDIS_URL, or with --cluster a throwaway cluster of the run's own), the
 * provider simulators and with --peer minimal the peer (bench/h2-peer.ts), and the engine
 * (`bin/engine.js start` of --engine-root: every role in one process, or with
 * --dispatch-processes every role but dispatch, and dispatch alone in processes of its own), with a
 * project whose credentials point at the simulators or the peer.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { BroadcastOptions } from './broadcast-options.ts';
import { startChild, type Child } from './child.ts';
import { processCpu, redisCpu } from './cpu.ts';
import { call, startSimulators, waitFor, type Project, type Simulators } from './deployment.ts';
import { engineNodeFlags, engineBin as freshEngineBin } from './engine-build.ts';
import { root } from './paths.ts';
import { REDIS_URL } from './redis.ts';
import { PrivateCluster } from './redis-cluster.ts';
import { log, type Teardown } from './run.ts';

/** A node process of the run, with the last of what it wrote. */
export type NodeProcess = ChildProcess & { output: () => string };

/**
 * The node processes the run starts itself (the engine's and the ceilings'), stopped at its end
 * last first: the engine before the simulators it sends to, and with time to write its profile.
 */
export class Processes {
  private readonly all: ChildProcess[] = [];
  private stopping = false;

  spawn(name: string, args: string[], env: NodeJS.ProcessEnv): NodeProcess {
    const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
    let output = '';
    const keep = (d: Buffer): void => {
      output = (output + d.toString()).slice(-8000);
    };
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    proc.once('exit', (code, signal) => {
      if (!this.stopping) log(`bench: ${name} exited (${code ?? signal})`);
    });
    this.all.push(proc);
    return Object.assign(proc, { output: () => output });
  }

  async stopAll(): Promise<void> {
    this.stopping = true;
    for (const proc of [...this.all].reverse()) await stopProcess(proc);
  }
}

async function stopProcess(proc: ChildProcess, ms = 20_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
  await exited;
  clearTimeout(timer);
}

/** CPU seconds read at one moment from every process of the run, and from Redis. */
export interface CpuMark {
  at: number;
  engine: number;
  /** The dispatch processes' together, with --dispatch-processes; else 0. */
  dispatch: number;
  /** Each dispatch process's. */
  dispatches: number[];
  simulator: number;
  redis: number;
}

/** What the peer counted since its last reset (bench/h2-peer.ts). */
export interface PeerCount {
  pushes: number;
  distinct: number;
  duplicates: number;
  sessions: number;
}

export interface BroadcastDeployment {
  prefix: string;
  redisUrl: string;
  /** A connection to each Redis node: one, or every node of a cluster (CPU is read from each). */
  redisNodes: Redis[];
  sims: Simulators;
  ca: Buffer;
  /** The APNs credentials the project has: the simulator's, or with --peer minimal the peer's. */
  apnsCreds: string;
  /** With --peer minimal, the peer's URL; else null. */
  peerUrl: string | null;
  /** The gateway's URL. */
  base: string;
  project: Project;
  enginePid: number;
  dispatchPids: number[];
  /** The process whose memory growth the goal is about: the first dispatch process, or the one engine. */
  memoryPid: number;
  processes: Processes;
  /** Before a sender starts: the simulator forgets the provider token in force (so a newer one is not a 429), the peer its counts. */
  forget(): Promise<void>;
  cpuMark(): Promise<CpuMark>;
  /** What the peer counted since it was last reset, with --peer minimal; else null. */
  peerCount(): Promise<PeerCount | null>;
}

export async function startDeployment(options: BroadcastOptions, work: string, teardown: Teardown): Promise<BroadcastDeployment> {
  const prefix = `benchbc${Date.now().toString(36)}:`;
  const redisUrl = await startRedis(options, prefix, teardown);
  const redisNodes = redisUrl.split(',').map((url) => teardown.connection(new Redis(url, { maxRetriesPerRequest: 2 })));
  log(`bench: ${options.users} users, audience ${options.audience}, engine ${options.fromSource ? 'from source (tsx)' : 'dist/ build'} in ${options.engineRoot}, work dir ${work}`);
  const providers = await startProviders(options, work, teardown);
  const processes = new Processes();
  teardown.add('stopping the engine and ceiling processes', () => processes.stopAll());
  const engine = await startEngines(options, { prefix, redisUrl, work, sims: providers.sims, apnsCreds: providers.apnsCreds }, processes);
  /** The process the pushes go to: the simulators', or the peer's. */
  const providerPid = (providers.peer ?? providers.sims.child).proc.pid ?? 0;
  const peerUrl = providers.peer === null ? null : `http://127.0.0.1:${providers.peer.port}`;
  log(
    `bench: engine pid ${engine.pid} on ${engine.base}, ${peerUrl === null ? 'simulators' : 'h2 peer'} pid ${providerPid}${peerUrl === null ? '' : ` on ${peerUrl}`}, project ${engine.project.project_id}`,
  );
  const apnsUrl = providers.sims.urls['apns'] ?? '';
  return {
    prefix,
    redisUrl,
    redisNodes,
    sims: providers.sims,
    ca: providers.ca,
    apnsCreds: providers.apnsCreds,
    peerUrl,
    base: engine.base,
    project: engine.project,
    enginePid: engine.pid,
    dispatchPids: engine.dispatchPids,
    memoryPid: engine.dispatchPids[0] ?? engine.pid,
    processes,
    forget: async () => {
      if (peerUrl === null) await resetApns(apnsUrl, providers.ca);
      else await peerCall(peerUrl, 'POST', '/reset');
    },
    cpuMark: async () => {
      const [engineCpu, simulator, redis, dispatches] = await Promise.all([cpuOf(engine.pid), cpuOf(providerPid), redisNodesCpu(redisNodes), Promise.all(engine.dispatchPids.map(cpuOf))]);
      return { at: Date.now(), engine: engineCpu, dispatch: dispatches.reduce((a, b) => a + b, 0), dispatches, simulator, redis };
    },
    peerCount: async () => (peerUrl === null ? null : (JSON.parse(await peerCall(peerUrl, 'GET', '/count')) as PeerCount)),
  };
}

/** REDIS_URL, or with --cluster the nodes of a cluster started for the run; its keys or the cluster go at the end. */
async function startRedis(options: BroadcastOptions, prefix: string, teardown: Teardown): Promise<string> {
  if (options.clusterNodes === 0) {
    teardown.keys(prefix, REDIS_URL);
    return REDIS_URL;
  }
  // Redis's default node timeout: the tests' 2 s could fail a node of a loaded 2-core host mid-run.
  const cluster = await PrivateCluster.create({ primaries: options.clusterNodes, nodeTimeoutMs: 15_000 });
  // Held before launch so an interrupt while it starts still stops it; its keys go with it.
  teardown.add('stopping the Redis Cluster', () => cluster.stop());
  await cluster.launch();
  log(`bench: a ${options.clusterNodes}-node Redis Cluster on ports ${cluster.ports.join(', ')}, in ${cluster.dir}`);
  return cluster.url;
}

/** The simulators and, with --peer minimal, the peer, which the APNs credentials (the simulator's key and topic) then point at. */
async function startProviders(options: BroadcastOptions, work: string, teardown: Teardown): Promise<{ sims: Simulators; ca: Buffer; peer: Child | null; apnsCreds: string }> {
  const sims = await startSimulators(join(work, 'sims'));
  teardown.child(sims.child);
  const ca = await readFile(sims.caFile);
  if (!options.peer) return { sims, ca, peer: null, apnsCreds: sims.credentials('apns') };
  const peer = teardown.child(await startChild('h2 peer', ['--import', 'tsx', join(root, 'bench/h2-peer.ts')], {}, { timeoutMs: 30_000 }));
  const apnsCreds = join(work, 'apns-peer.json');
  const simulatorCreds = JSON.parse(await readFile(sims.credentials('apns'), 'utf8')) as object;
  await writeFile(apnsCreds, JSON.stringify({ ...simulatorCreds, base_url: `http://127.0.0.1:${peer.port}` }));
  return { sims, ca, peer, apnsCreds };
}

interface Engines {
  base: string;
  project: Project;
  pid: number;
  dispatchPids: number[];
}

/** The project and its credentials through the `engine` command, then `engine start` and the dispatch processes. */
async function startEngines(
  options: BroadcastOptions,
  at: { prefix: string; redisUrl: string; work: string; sims: Simulators; apnsCreds: string },
  processes: Processes,
): Promise<Engines> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KEY_PREFIX: at.prefix,
    DATA_DIR: join(at.work, 'data'),
    PORT: String(port),
    PROVIDER_CA_FILE: at.sims.caFile,
    OUTBOUND_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
    REDIS_URL: at.redisUrl,
  };
  if (options.fromSource) env['ENGINE_FROM_SOURCE'] = '1';
  else delete env['ENGINE_FROM_SOURCE'];
  // This tree's build is made fresh first; a release's worktree is built once, as it is.
  const engineBin = resolve(options.engineRoot) === resolve(root) && !options.fromSource ? await freshEngineBin() : join(options.engineRoot, 'bin/engine.js');
  const cli = async (...args: string[]): Promise<string> => (await promisify(execFile)(process.execPath, [engineBin, ...args], { env, cwd: root })).stdout;
  const project = JSON.parse(await cli('project', 'create', 'bench-broadcast', '--json')) as Project;
  for (const provider of ['apns', 'fcm', 'webpush']) await cli('providers', 'set', project.project_id, provider, '--file', provider === 'apns' ? at.apnsCreds : at.sims.credentials(provider));
  const profArgs = options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${resolve(options.cpuProf)}`] : [];
  const nodeFlags = [...engineNodeFlags(options.engineRoot), ...options.nodeFlags.split(' ').filter(Boolean)];
  const engine = processes.spawn('engine', [...nodeFlags, ...profArgs, engineBin, 'start', ...(options.split ? ['--roles', 'gateway,apply,fanout,recorder,scheduler'] : [])], env);
  const dispatchers = Array.from({ length: options.dispatchProcesses }, (_, i) => processes.spawn(`dispatch ${i + 1}`, [...nodeFlags, engineBin, 'start', '--roles', 'dispatch'], env));
  const base = `http://127.0.0.1:${port}`;
  await waitFor('the engine', async () => ((await call(`${base}/readyz`, 'GET', null)).status === 200 ? true : undefined), 120_000);
  return { base, project, pid: engine.pid ?? 0, dispatchPids: dispatchers.map((d) => d.pid ?? 0) };
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

/**
 * CPU seconds of one process and its descendants so far: the engine's embedded ClickHouse runs in
 * a process of its own, and its inserts and queries are the engine's work (0.11.1 ran it inside).
 */
async function cpuOf(pid: number): Promise<number> {
  const seconds = await processCpu(pid);
  if (seconds === null) throw new Error(`no CPU figures for process ${pid}: it is gone`);
  return seconds;
}

async function redisNodesCpu(nodes: readonly Redis[]): Promise<number> {
  const each = await Promise.all(nodes.map(redisCpu));
  return each.reduce((sum, seconds) => sum + seconds, 0);
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
