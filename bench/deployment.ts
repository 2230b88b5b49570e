/**
 * The default deployment as benchmarks start it: the provider simulators and one engine process
 * (`bin/engine.js start`, every role, embedded ClickHouse) under a fresh KEY_PREFIX and DATA_DIR,
 * with a project created and provider credentials registered through the `engine` command.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { RECORDER_GROUP } from '../engine/infra/redis/topology.ts';
import { APPLY_GROUP, type Topology } from '../engine/infra/redis/topology.ts';
import { startChild, type Child } from './child.ts';
import { engineNodeFlags, engineBin as freshEngineBin } from './engine-build.ts';
import { root } from './paths.ts';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The provider simulators (simulators/main.ts) and the files they wrote into `dir`. */
export interface Simulators {
  child: Child;
  dir: string;
  /** PROVIDER_CA_FILE for the engine. */
  caFile: string;
  urls: Record<string, string>;
  /** The credential file of a provider, for `engine providers set`. */
  credentials(provider: string): string;
}

export async function startSimulators(dir: string): Promise<Simulators> {
  const child = await startChild('simulators', ['--import', 'tsx', join(root, 'simulators/main.ts'), '--out', dir, '--fresh'], {}, {
    readyText: 'provider simulators running',
    listens: false,
    timeoutMs: 30_000,
  });
  const info = JSON.parse(await readFile(join(dir, 'simulators.json'), 'utf8')) as { caFile: string; urls: Record<string, string> };
  return { child, dir, caFile: info.caFile, urls: info.urls, credentials: (provider) => join(dir, `${provider}.json`) };
}

export interface Project {
  project_id: string;
  sdk_key: string;
  rest_key: string;
}

/** One engine process and the `engine` command line under the same environment. */
export interface Engine {
  child: Child;
  /** The gateway's URL; port 0 when the process runs no gateway. */
  base: string;
  pid: number;
  dataDir: string;
  /** Runs `engine <args>` with the deployment's environment; resolves to its stdout. */
  cli(...args: string[]): Promise<string>;
  createProject(name: string): Promise<Project>;
}

export interface EngineOptions {
  prefix: string;
  dataDir: string;
  redisUrl: string;
  /** `engine start --roles`; default every role. */
  roles?: string[];
  /** More environment (PROVIDER_CA_FILE, PARTITIONS, ...). */
  env?: Record<string, string>;
  /** Node flags after the engine's own (engineNodeFlags) and those of ENGINE_NODE_FLAGS (for example `--cpu-prof`). */
  nodeFlags?: string[];
  /** The checkout whose engine runs (a release built by bench/release.ts); default this tree. */
  engineRoot?: string;
}

/**
 * Starts `engine start` on a free port (the dist/ build when there is one, as `bin/engine.js`
 * decides, this tree's built first when older than its sources; ENGINE_FROM_SOURCE=1 in the
 * environment runs the sources) and resolves once it logged
 * `started`. Its node runs with the checkout's own flags (engineNodeFlags), then those of
 * ENGINE_NODE_FLAGS in the environment (for example `--cpu-prof`).
 */
export async function startEngine(opts: EngineOptions): Promise<Engine> {
  // No SQL listener: its fixed port would collide between engines of one machine. The simulators
  // listen on loopback, which the outbound guard refuses by default (docs/api.md#outbound-urls).
  const env: Record<string, string> = { KEY_PREFIX: opts.prefix, DATA_DIR: opts.dataDir, REDIS_URL: opts.redisUrl, LOG_LEVEL: 'info', SQL_PORT: '0', OUTBOUND_ALLOW_PRIVATE: 'true', ...opts.env };
  const roles = opts.roles === undefined ? [] : ['--roles', opts.roles.join(',')];
  const engineRoot = opts.engineRoot ?? root;
  const nodeFlags = [...engineNodeFlags(engineRoot), ...(process.env['ENGINE_NODE_FLAGS'] ?? '').split(' ').filter((flag) => flag !== ''), ...(opts.nodeFlags ?? [])];
  // A process without the gateway listens nowhere: it is started once it logged `started`.
  const listens = opts.roles === undefined || opts.roles.includes('gateway');
  // This tree's build is made fresh first; a release's worktree is built once, as it is.
  const engineBin = opts.engineRoot === undefined ? await freshEngineBin() : join(engineRoot, 'bin/engine.js');
  const child = await startChild('engine', [...nodeFlags, engineBin, 'start', ...roles, '--port', '0'], env, { readyMsg: 'started', timeoutMs: 180_000, listens });
  const cli = async (...args: string[]): Promise<string> =>
    (await promisify(execFile)(process.execPath, [engineBin, ...args], { env: { ...process.env, ...env, LOG_LEVEL: 'warn' }, cwd: engineRoot })).stdout;
  return {
    child,
    base: `http://127.0.0.1:${child.port}`,
    pid: child.proc.pid ?? 0,
    dataDir: opts.dataDir,
    cli,
    createProject: async (name) => JSON.parse(await cli('project', 'create', name, '--json')) as Project,
  };
}

/** A JSON call; the body is parsed when it is JSON, else kept as text. */
export async function call(url: string, method: string, key: string | null, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method,
    headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as unknown };
  } catch {
    return { status: res.status, body: text };
  }
}

/** Polls `check` every `every` ms until it gives a value; throws after `ms`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, ms: number, every = 250): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(every);
  }
}

/**
 * Waits until segment All counts at least `users`: the users mirror in ClickHouse, which fan-out
 * reads, holds every user registered. `heard` gets each count read.
 */
export async function waitMirrored(
  engine: { base: string; restKey: string },
  users: number,
  wait: { ms: number; every: number; heard?: (count: number) => void },
): Promise<void> {
  await waitFor(
    'the users mirror in ClickHouse',
    async () => {
      const count = ((await call(`${engine.base}/api/segments/All/count`, 'GET', engine.restKey)).body as { count?: number }).count ?? -1;
      wait.heard?.(count);
      return count >= users ? true : undefined;
    },
    wait.ms,
    wait.every,
  );
}

/**
 * The samples of a Prometheus text answer, by metric name, with its labels as written when it has
 * any (`svc_recorded_rows_total{table="events"}`).
 */
export async function metrics(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) ([0-9.eE+-]+)$/.exec(line);
    if (match?.[1] !== undefined) out.set(match[1], Number(match[2]));
  }
  return out;
}

/**
 * A consumer group's progress over some streams, summed (XINFO GROUPS): entries read by the group
 * so far (`entries-read`), not yet read (`lag`), read but not yet acknowledged (`pending`). A
 * stream without the group counts as wholly unread; one that does not exist counts nothing.
 */
export interface GroupProgress {
  read: number;
  lag: number;
  pending: number;
}

export async function groupProgress(redis: Redis, keys: string[], group: string): Promise<GroupProgress> {
  const each = await Promise.all(
    keys.map(async (key): Promise<GroupProgress> => {
      if ((await redis.exists(key)) === 0) return { read: 0, lag: 0, pending: 0 };
      const groups = (await redis.xinfo('GROUPS', key)) as unknown[][];
      const found = groups.map(fieldsOf).find((g) => g.get('name') === group);
      if (found === undefined) return { read: 0, lag: await redis.xlen(key), pending: 0 };
      return { read: Number(found.get('entries-read') ?? 0), lag: Number(found.get('lag') ?? 0), pending: Number(found.get('pending') ?? 0) };
    }),
  );
  return each.reduce((sum, p) => ({ read: sum.read + p.read, lag: sum.lag + p.lag, pending: sum.pending + p.pending }), { read: 0, lag: 0, pending: 0 });
}

/** Ingest entries not yet applied, summed over partitions: the apply group's `lag` plus its `pending`. */
export async function unapplied(redis: Redis, topology: Topology): Promise<number> {
  const ingest = Array.from({ length: topology.partitions }, (_, p) => topology.ingest(p));
  const progress = await groupProgress(redis, ingest, APPLY_GROUP);
  return progress.lag + progress.pending;
}

/** Changes entries not yet recorded in ClickHouse, summed over partitions (lag plus pending). */
export async function unrecorded(redis: Redis, topology: Topology): Promise<number> {
  const progress = await groupProgress(redis, changesKeys(topology), RECORDER_GROUP);
  return progress.lag + progress.pending;
}

/** What is left to do: ingest entries not yet applied, changes entries not yet recorded. */
export async function backlog(redis: Redis, topology: Topology): Promise<{ unapplied_entries: number; unrecorded_changes: number }> {
  const [entries, changes] = await Promise.all([unapplied(redis, topology), unrecorded(redis, topology)]);
  return { unapplied_entries: entries, unrecorded_changes: changes };
}

/**
 * Changes entries appended so far (read by the recorder or not) and recorded (read and
 * acknowledged), summed over partitions, each the mean of `samples` samples `everyMs` apart, with
 * the mean time of the samples: the recorder inserts in rounds (every half its linger), which
 * makes `recorded` a saw-tooth that a second of samples evens out.
 */
export async function recorderProgress(redis: Redis, topology: Topology, samples = 5, everyMs = 200): Promise<{ at: number; appended: number; recorded: number }> {
  const mean = { at: 0, appended: 0, recorded: 0 };
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(everyMs);
    const p = await groupProgress(redis, changesKeys(topology), RECORDER_GROUP);
    mean.at += performance.now() / samples;
    mean.appended += (p.read + p.lag) / samples;
    mean.recorded += (p.read - p.pending) / samples;
  }
  return mean;
}

const changesKeys = (topology: Topology): string[] => Array.from({ length: topology.partitions }, (_, p) => topology.changes(p));

/** What `startEngine` runs: the commit, and the engine's sources changed since it and since the build. */
export interface EngineBuild {
  commit: string;
  from: 'dist' | 'sources';
  uncommitted: string[];
  newer_than_build: string[];
}

export async function engineBuild(): Promise<EngineBuild> {
  const run = async (cmd: string, args: string[]): Promise<string[]> => (await promisify(execFile)(cmd, args, { cwd: root })).stdout.split('\n').filter(Boolean);
  const dirs = ['engine', 'actors', 'gateway', 'schemas', 'bin'];
  const [commit = ''] = await run('git', ['rev-parse', '--short', 'HEAD']);
  const uncommitted = await run('git', ['status', '--porcelain', '--', ...dirs]);
  const built = join(root, 'dist/bin/main.js');
  if (process.env['ENGINE_FROM_SOURCE'] === '1' || !existsSync(built)) return { commit, from: 'sources', uncommitted, newer_than_build: [] };
  const newer = await run('find', [...dirs, '-newer', built, '-type', 'f', '(', '-name', '*.ts', '-o', '-name', '*.lua', '-o', '-name', '*.sql', ')']);
  return { commit, from: 'dist', uncommitted, newer_than_build: newer };
}

/** Seconds from `from` (a performance.now()) until `check` gives 0, polled every 100 ms; null after `ms`. */
export async function secondsUntilZero(check: () => Promise<number>, from: number, ms: number): Promise<number | null> {
  while (performance.now() - from < ms) {
    if ((await check()) === 0) return Math.round((performance.now() - from) / 10) / 100;
    await sleep(100);
  }
  return null;
}

/** Seconds from `from` until everything accepted was applied, and recorded; null: not within `ms`. */
export async function drainSeconds(redis: Redis, topology: Topology, from: number, ms: number): Promise<{ applied: number | null; recorded: number | null }> {
  const [applied, recorded] = await Promise.all([secondsUntilZero(() => unapplied(redis, topology), from, ms), secondsUntilZero(() => unrecorded(redis, topology), from, ms)]);
  return { applied, recorded };
}

/** Waits until every ingest entry is applied (`unapplied` is 0). */
export async function waitApplied(redis: Redis, topology: Topology, ms: number): Promise<void> {
  await waitFor('every write applied', async () => ((await unapplied(redis, topology)) === 0 ? true : undefined), ms, 200);
}

function fieldsOf(reply: unknown[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), reply[i + 1]);
  return out;
}
