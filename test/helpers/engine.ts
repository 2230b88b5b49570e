import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { testDatabase } from '../clickhouse-server/database.ts';
import { freshBuild } from '../../bench/engine-build.ts';
import { serverEnv } from './http-server.ts';
import { localOutbound } from './outbound.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from './redis.ts';

const bin = fileURLToPath(new URL('../../bin/engine.js', import.meta.url));
/**
 * What node runs for `engine`: the build when it is fresh (bench/engine-build.ts), else the
 * sources, which a build older than them would not be.
 */
const build = freshBuild();
export const engineEntry: readonly string[] = build === null ? [bin] : [build];
const fromSource: Record<string, string> = build === null ? { ENGINE_FROM_SOURCE: '1' } : {};

/**
 * Spawns node with `args`, without tap's process tracker: tap adds it to every child's
 * NODE_OPTIONS (for coverage, which the suite turns off), and it costs each engine process about
 * 0.3 s of CPU at start. `env -u` drops it after tap's spawn hook has added it; `env` execs node,
 * so the pid and signals are node's.
 */
function spawnNode(args: readonly string[], env: Record<string, string>): ChildProcessByStdio<null, Readable, Readable> {
  return spawn('env', ['-u', 'NODE_OPTIONS', process.execPath, ...args], { env: { ...process.env, ...fromSource, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface EngineProcess {
  proc: ChildProcess;
  /** Port of the gateway role (0 when the process runs no gateway). */
  port: number;
  url: string;
  /** Every JSON log line the process printed so far. */
  logs: Record<string, unknown>[];
  /** Everything it wrote on stdout so far (logs go to stderr, so normally nothing). */
  stdout(): string;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
}

/** Environment for processes of one test: its own key prefix and data directory, short leases. */
export function testEnv(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'engine-test-'));
  // SQL_PORT 0: the SQL listener's fixed default port would collide between tests; test/sql picks free ones.
  return { REDIS_URL, KEY_PREFIX: prefix, DATA_DIR: dataDir, LEASE_MS: '1000', LOG_LEVEL: 'info', PARTITIONS: '8', CHECK_ANSWERS: 'true', SQL_PORT: '0', ...localOutbound, ...serverEnv, ...extra };
}

/** Runs `engine <args>` to completion and returns its exit code and output. */
export function runEngine(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawnNode([...engineEntry, ...args], env);
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // 'close', not 'exit': the output is read to its end.
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Starts `engine start --roles <roles> --port 0` and resolves once it logged "started" (and, with a
 * gateway, "listening" with its port). `entry` is what node runs: by default the fresh build or
 * the sources (engineEntry), or node options and a build's bin/main.js.
 */
export function startEngine(roles: string[], env: Record<string, string>, entry: readonly string[] = engineEntry): Promise<EngineProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawnNode([...entry, 'start', '--roles', roles.join(','), '--port', '0'], env);
    const logs: Record<string, unknown>[] = [];
    let port = 0;
    let stdout = '';
    let stderr = '';
    const exited = new Promise<number | null>((r) => proc.on('close', (code) => r(code)));
    const onLine = (line: string): void => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      if (entry['msg'] === 'listening' && typeof entry['port'] === 'number') port = entry['port'];
      if (entry['msg'] === 'started') {
        resolve({
          proc,
          port,
          url: `http://127.0.0.1:${port}`,
          logs,
          stdout: () => stdout,
          stderr: () => stderr,
          stop: async () => {
            proc.kill('SIGTERM');
            return exited;
          },
          kill: async () => {
            proc.kill('SIGKILL');
            await exited;
          },
        });
      }
    };
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stdout.on('data', lines(onLine));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.stderr.on('data', lines(onLine));
    void exited.then((code) => reject(new Error(`engine exited with ${code} before it started: ${stderr}`)));
  });
}

/** A 'data' listener that calls `onLine` with each whole line (a line may arrive in pieces). */
function lines(onLine: (line: string) => void): (d: Buffer) => void {
  let buffered = '';
  return (d) => {
    buffered += d.toString();
    const whole = buffered.split('\n');
    buffered = whole.pop() ?? '';
    whole.forEach(onLine);
  };
}

export interface TestDeployment {
  prefix: string;
  env: Record<string, string>;
  project: CreatedProject;
  /**
   * Another project under this deployment's prefix: a test that shares its file's engine process
   * with the others starts from a project of its own (keys, settings and users).
   */
  createProject(opts?: { identityVerification?: boolean }): Promise<CreatedProject>;
  /** Starts an engine process under this deployment's prefix; it is killed when the test ends. */
  start(roles: string[], env?: Record<string, string>): Promise<EngineProcess>;
}

/**
 * A fresh key prefix with one project in it (and, with TEST_CLICKHOUSE_URL set, a fresh database
 * there for the engine processes). When the test ends, every process started through
 * `start` is killed and then the prefix is deleted.
 */
export async function deployment(t: Test, opts: { identityVerification?: boolean; env?: Record<string, string> } = {}): Promise<TestDeployment> {
  const prefix = testPrefix();
  // A test that names its own CLICKHOUSE_URL (an unreachable one, say) keeps it.
  const database = opts.env?.['CLICKHOUSE_URL'] === undefined ? await testDatabase() : undefined;
  const env = testEnv(prefix, { ...database?.env, ...opts.env });
  const config = loadConfig(env);
  const createProject = async (more: { identityVerification?: boolean } = {}): Promise<CreatedProject> => {
    const redis = createRedis(config);
    try {
      return await new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)).createProject('test', more.identityVerification ?? false);
    } finally {
      redis.disconnect();
    }
  };
  const project = await createProject(opts);
  const started: EngineProcess[] = [];
  t.teardown(async () => {
    await Promise.all(started.map((p) => p.kill()));
    await cleanupPrefix(prefix);
    await database?.drop();
  });
  return {
    prefix,
    env,
    project,
    createProject,
    start: async (roles, extra = {}) => {
      const proc = await startEngine(roles, { ...env, ...extra });
      started.push(proc);
      return proc;
    },
  };
}
