import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/** A three-master Redis Cluster of the test's own, on free loopback ports, nothing kept on disk. */
export class PrivateCluster {
  private constructor(
    readonly ports: number[],
    private readonly procs: ChildProcess[],
  ) {}

  /** REDIS_URL for the engine: a comma-separated list means Redis Cluster. */
  get url(): string {
    return this.ports.map((p) => `redis://127.0.0.1:${p}`).join(',');
  }

  static async start(): Promise<PrivateCluster> {
    const ports: number[] = [];
    while (ports.length < 3) {
      const port = await freeNodePort();
      if (!ports.includes(port)) ports.push(port);
    }
    const dir = mkdtempSync(join(tmpdir(), 'cluster-'));
    const procs = ports.map((port) =>
      spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--save', '', '--appendonly', 'no'],
        { cwd: dir, stdio: 'ignore' },
      ),
    );
    const cluster = new PrivateCluster(ports, procs);
    try {
      for (const port of ports) await answers(port);
      await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
      for (const port of ports) await clusterOk(port);
    } catch (err) {
      // Nodes left running would keep the test process alive until its timeout.
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.procs.map(
        (proc) =>
          new Promise<void>((resolve) => {
            if (proc.exitCode !== null) return resolve();
            proc.once('exit', () => resolve());
            proc.kill('SIGKILL');
          }),
      ),
    );
  }
}

async function poll(port: number, check: (redis: Redis) => Promise<boolean>): Promise<void> {
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    // Generous: on a loaded 2-core machine a node can take seconds to start or to agree on the cluster.
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
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

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
