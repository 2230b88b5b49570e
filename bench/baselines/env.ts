/** The baseline's settings, read once at start from the environment; a bad value stops the process. */
export interface BaselineEnv {
  /** PORT: where the server listens on 127.0.0.1; 0 (the default) picks a free port. */
  port: number;
  /** REDIS_URL: default redis://127.0.0.1:6379. */
  redisUrl: string;
  /** KEY_PREFIX: prefix of every key, BullMQ's and the user state's; default `baseline:`. */
  keyPrefix: string;
  /** BASELINE_KEY: the one key `Authorization: Bearer <key>` must carry; required by the server. */
  key: string;
  /** WORKER_CONCURRENCY: jobs the worker applies at once; default 50. */
  concurrency: number;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): Readonly<BaselineEnv> {
  const whole = (name: string, fallback: number, min: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number of at least ${min}, got "${raw}"`);
    return value;
  };
  return Object.freeze({
    port: whole('PORT', 0, 0),
    redisUrl: env['REDIS_URL'] || 'redis://127.0.0.1:6379',
    keyPrefix: env['KEY_PREFIX'] || 'baseline:',
    key: env['BASELINE_KEY'] ?? '',
    concurrency: whole('WORKER_CONCURRENCY', 50, 1),
  });
}

/** One JSON log line on stdout, the shape bench/child.ts waits for. */
export function logLine(entry: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(entry)}\n`);
}
