/**
 * The baseline's worker (see bench/baselines/server.ts): a BullMQ Worker that applies each
 * enqueued SDK write to the user's hashes (bench/baselines/state.ts), WORKER_CONCURRENCY jobs at
 * once (default 50).
 *
 * Run: `node --import tsx bench/baselines/worker.ts` with REDIS_URL and KEY_PREFIX as the server's.
 * Prints `{"msg":"started"}` once it is connected and taking jobs; on SIGTERM or SIGINT it finishes
 * the jobs in hand and exits.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { logLine, readEnv } from './env.ts';
import { applyWrite, QUEUE, type WriteJob } from './state.ts';

const env = readEnv();
const state = new Redis(env.redisUrl, { maxRetriesPerRequest: 2 });
const worker = new Worker<WriteJob>(QUEUE, (job) => applyWrite(state, env.keyPrefix, job.data), {
  connection: new Redis(env.redisUrl, { maxRetriesPerRequest: null }),
  prefix: `${env.keyPrefix}bull`,
  concurrency: env.concurrency,
});
worker.on('failed', (job, err) => logLine({ msg: 'job failed', id: job?.id ?? null, error: err.message }));
worker.on('error', (err) => logLine({ msg: 'worker error', error: err.message }));

await worker.waitUntilReady();
logLine({ msg: 'started', concurrency: env.concurrency });

let closing: Promise<void> | null = null;
const stop = (): Promise<void> => {
  closing ??= (async () => {
    await worker.close();
    state.disconnect();
  })();
  return closing;
};
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void stop().then(() => process.exit(0)));
