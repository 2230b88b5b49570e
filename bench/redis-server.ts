import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { waitFor } from './deployment.ts';
import { bindable } from './redis-cluster.ts';

/** The redis-server binary (REDIS_SERVER), for benchmarks that run one of their own. */
const REDIS_SERVER = process.env['REDIS_SERVER'] ?? 'redis-server';

/** A redis-server of a benchmark's own: its URL, and a stop that kills it. */
export interface RedisServer {
  url: string;
  stop(): Promise<void>;
}

/** A free port below the ephemeral range, so no client socket takes it between the check and the bind. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 8_000);
    if (await bindable(port)) return port;
  }
}

/**
 * Starts a redis-server on a free port that keeps nothing (`--save "" --appendonly no`), working
 * in `dir`, and waits until it answers: what it counts and spends (commandstats, CPU) is one
 * engine's alone.
 */
export async function startRedisServer(dir: string): Promise<RedisServer> {
  const port = await freePort();
  const proc: ChildProcess = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
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
    await waitFor(
      `redis-server on port ${port}`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
        if (probe.status !== 'ready') await probe.connect();
        return (await probe.ping()) === 'PONG' ? true : undefined;
      },
      10_000,
      50,
    );
  } catch (err) {
    await stop();
    throw err;
  } finally {
    probe.disconnect();
  }
  return { url, stop };
}
