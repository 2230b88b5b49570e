import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

export const run = promisify(execFile);

export interface PrivateClusterOptions {
  /** How many primaries (at least 3, as `redis-cli --cluster create` asks); default 3. */
  primaries?: number;
  /** Each node keeps an append-only file (fsync always) in a directory of its own, as production does. */
  durable?: boolean;
  /** One replica per primary instead of none. */
  replicas?: boolean;
  /** cluster-node-timeout, ms: how long before a silent node counts as failed (default 2000). */
  nodeTimeoutMs?: number;
}

/**
 * A throwaway Redis Cluster of a test's or a benchmark's own (three primaries unless told, with or
 * without a replica each) on free loopback ports, in a temporary directory that `stop` removes. A
 * node can be killed and started again on its data (test/helpers/cluster-fault.ts).
 */
export class PrivateCluster {
  private readonly procs = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: number[],
    /** Each node's nodes.conf (and append-only file) is in a directory of its own under it. */
    readonly dir: string,
    private readonly opts: PrivateClusterOptions,
  ) {}

  /** REDIS_URL for the engine: a comma-separated list means Redis Cluster. */
  get url(): string {
    return this.ports.map((p) => `redis://127.0.0.1:${p}`).join(',');
  }

  static async start(opts: PrivateClusterOptions = {}): Promise<PrivateCluster> {
    const cluster = await PrivateCluster.create(opts);
    await cluster.launch();
    return cluster;
  }

  /**
   * Picks the ports and makes the directory, starting nothing: a caller that holds the cluster
   * before `launch` can `stop` it on an interrupt while it is still starting.
   */
  static async create(opts: PrivateClusterOptions = {}): Promise<PrivateCluster> {
    const primaries = opts.primaries ?? 3;
    if (!Number.isInteger(primaries) || primaries < 3) throw new Error(`a Redis Cluster needs at least 3 primaries, got ${primaries}`);
    const ports: number[] = [];
    while (ports.length < primaries * (opts.replicas ? 2 : 1)) {
      const port = await freeNodePort();
      if (!ports.includes(port)) ports.push(port);
    }
    return new PrivateCluster(ports, mkdtempSync(join(tmpdir(), 'cluster-')), opts);
  }

  /** Starts every node, creates the cluster and waits until every node says it is ok; stops it all on failure. */
  async launch(): Promise<void> {
    try {
      for (const port of this.ports) this.spawnNode(port);
      for (const port of this.ports) await answers(port);
      const replicas = this.opts.replicas ? '1' : '0';
      await run('redis-cli', ['--cluster', 'create', ...this.ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', replicas, '--cluster-yes']);
      await this.settled();
    } catch (err) {
      // Nodes left running would keep the test or bench process alive.
      await this.stop();
      throw err;
    }
  }

  /** Waits until every running node says the cluster is ok and agrees on who serves each slot. */
  async settled(): Promise<void> {
    for (const port of this.procs.keys()) await clusterOk(port);
    await poll(this.ports[0] ?? 0, async (r) => {
      const res = await run('redis-cli', ['--cluster', 'check', `127.0.0.1:${r.options.port ?? 0}`]).catch(() => null);
      return res !== null && res.stdout.includes('[OK] All nodes agree about slots configuration.') && !res.stdout.includes('[WARNING]');
    });
  }

  /** Kills one node with SIGKILL. */
  async kill(port: number): Promise<void> {
    const proc = this.procs.get(port);
    this.procs.delete(port);
    if (proc) await exit(proc);
  }

  /** Stops (SIGSTOP) or resumes (SIGCONT) one node: stopped, it answers nothing, not even its primary. */
  freeze(port: number, frozen: boolean): void {
    this.procs.get(port)?.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
  }

  /** Starts a killed node again on its data (a durable cluster's append-only file and nodes.conf). */
  async restart(port: number): Promise<void> {
    this.spawnNode(port);
    await answers(port);
  }

  async stop(): Promise<void> {
    const procs = [...this.procs.values()];
    this.procs.clear();
    await Promise.all(procs.map(exit));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private spawnNode(port: number): void {
    const dir = join(this.dir, String(port));
    mkdirSync(dir, { recursive: true });
    const storage = this.opts.durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'];
    args.push('--cluster-node-timeout', String(this.opts.nodeTimeoutMs ?? 2000), '--save', '', ...storage);
    this.procs.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
  }
}

function exit(proc: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGKILL');
  });
}

/** Polls a node until `check` holds (30 s: on a loaded 2-core machine a node can take seconds). */
export async function poll(port: number, check: (redis: Redis) => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
      try {
        if (redis.status !== 'ready') await redis.connect();
        if (await check(redis)) return;
      } catch {
        // Not up yet.
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`cluster node ${port} did not become ready`);
  } finally {
    redis.disconnect();
  }
}

const answers = (port: number) => poll(port, async (r) => (await r.ping()) === 'PONG');
const clusterOk = (port: number) => poll(port, async (r) => String(await r.cluster('INFO')).includes('cluster_state:ok'));

/**
 * A port for a cluster node whose bus port (port + 10 000) is free as well, both below the
 * ephemeral range (32 768 and up on Linux), so no client socket of the machine can take either.
 */
async function freeNodePort(): Promise<number> {
  for (;;) {
    const port = 15_000 + Math.floor(Math.random() * 7_000);
    if ((await bindable(port)) && (await bindable(port + 10_000))) return port;
  }
}

/** Whether a port of 127.0.0.1 is free to listen on now. */
export function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
