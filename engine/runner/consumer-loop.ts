import type { RedisClient } from '../redis.ts';

/**
 * The stop, pause and blocking-read plumbing of a stream consumer's loop (the partition consumer,
 * the recorder): blocking reads run on a connection of their own, which a stop disconnects so an
 * idle loop ends at once; a pause is cut short by a stop.
 */
export class ConsumerLoop {
  private stopped = false;
  private reading = false;
  private blocking: RedisClient | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly redis: RedisClient) {}

  /** True once stop() was called: the loop should finish its work in flight and end. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Runs the loop's body with the blocking connection open, and closes it after. */
  async run(body: () => Promise<void>): Promise<void> {
    const blocking = this.redis.duplicate() as RedisClient;
    blocking.on('error', () => {
      // Failed reads surface as rejected commands, which the loop handles.
    });
    this.blocking = blocking;
    try {
      await body();
    } finally {
      blocking.disconnect();
    }
  }

  /** A blocking read on the loop's own connection; stop() abandons it (it rejects). */
  async read<T>(call: (blocking: RedisClient) => Promise<T>): Promise<T> {
    const blocking = this.blocking;
    if (!blocking) throw new Error('ConsumerLoop.read outside run()');
    this.reading = true;
    try {
      return await call(blocking);
    } finally {
      this.reading = false;
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.reading) this.blocking?.disconnect();
    this.wake?.();
  }

  pause(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** Creates consumer group `group` on `stream` (and the stream) from its start, unless it exists. */
export async function ensureGroup(redis: RedisClient, stream: string, group: string): Promise<void> {
  try {
    await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
  } catch (err) {
    if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw err;
  }
}
