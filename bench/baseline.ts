/**
 * The usual alternative (bench/baselines/: a Fastify server enqueueing with BullMQ and a BullMQ
 * worker applying the jobs, each in a process of its own) as the SDK benchmarks start it, under a
 * key prefix of its own on the benchmark's Redis.
 */
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE } from './baselines/state.ts';
import { startChild, type Child } from './child.ts';
import { root } from './paths.ts';
import type { Teardown } from './run.ts';

export interface Baseline {
  server: Child;
  worker: Child;
  /** The server's URL. */
  base: string;
  /** The one key its `Authorization: Bearer` header takes, SDK and REST alike. */
  key: string;
  /** Jobs not applied yet: waiting, active, delayed or prioritized. */
  backlog(): Promise<number>;
  /** Closes the queue `backlog` reads and its connection; the processes run on. */
  close(): Promise<void>;
  /** Stops the server and the worker. */
  stop(): Promise<void>;
}

export interface BaselineOptions {
  prefix: string;
  key: string;
  redisUrl: string;
  /** How long each process may take to start. */
  timeoutMs: number;
}

/** Starts the worker and the server; both stop, and the queue closes, with `teardown`. */
export async function startBaseline(opts: BaselineOptions, teardown: Teardown): Promise<Baseline> {
  const env = { PORT: '0', REDIS_URL: opts.redisUrl, KEY_PREFIX: opts.prefix, BASELINE_KEY: opts.key };
  const script = (name: string): string[] => ['--import', 'tsx', join(root, 'bench/baselines', name)];
  const worker = teardown.child(await startChild('baseline worker', script('worker.ts'), env, { readyMsg: 'started', listens: false, timeoutMs: opts.timeoutMs }));
  const server = teardown.child(await startChild('baseline server', script('server.ts'), env, { timeoutMs: opts.timeoutMs }));
  const connection = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix: `${opts.prefix}bull` });
  let closed: Promise<void> | null = null;
  const close = (): Promise<void> => (closed ??= queue.close().finally(() => connection.disconnect()));
  teardown.add('closing the baseline queue', close);
  const backlog = async (): Promise<number> => {
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  };
  const stop = async (): Promise<void> => void (await Promise.all([server.stop(), worker.stop()]));
  return { server, worker, base: `http://127.0.0.1:${server.port}`, key: opts.key, backlog, close, stop };
}
