import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

/**
 * A redis-server of the test's own on a free port, so the test may stop and restart it. With a
 * data directory it runs as production does (append-only file, fsync on every write) and a
 * restart finds its data again; without one it keeps nothing.
 */
export class PrivateRedis {
  private proc: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    private readonly dataDir: string | undefined,
    private readonly maxmemory: string | undefined,
  ) {}

  /** `maxmemory` (say `24mb`) caps its memory with `noeviction`, as a Redis that holds state must run. */
  static async start(opts: { dataDir?: string; maxmemory?: string } = {}): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), opts.dataDir, opts.maxmemory);
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts (again) on the same port and waits until it answers PING. */
  async restart(): Promise<void> {
    const storage = this.dataDir === undefined ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', this.dataDir];
    const memory = this.maxmemory === undefined ? [] : ['--maxmemory', this.maxmemory, '--maxmemory-policy', 'noeviction'];
    this.proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', ...storage, ...memory], {
      stdio: 'ignore',
    });
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    for (let i = 0; i < 100; i++) {
      try {
        await client.connect();
        await client.ping();
        client.disconnect();
        return;
      } catch {
        client.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`redis-server did not start on port ${this.port}`);
  }

  /** Kills the server with SIGKILL (without a data directory its data is gone). */
  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = null;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  }
}

/**
 * A free port below the ephemeral range (32 768 and up on Linux), so no client socket of the
 * machine can take it while the server is down between a stop and a restart, and below the ports
 * of bench/redis-cluster.ts.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * 5_000);
    if (await bindable(port)) return port;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
