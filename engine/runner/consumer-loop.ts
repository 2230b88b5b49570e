import { Cluster, type RedisOptions } from 'ioredis';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { RedisClient } from '../redis.ts';

/** How long past its BLOCK time a read may go unanswered before its connection is dropped, ms. */
const READ_GRACE_MS = 5000;

/**
 * A group read moves entries to the pending list even if its reply is lost, so reads are never
 * resent after a reconnect and fail when the connection drops; the consumer then re-reads its
 * pending entries (docs/architecture.md, "Consumer groups and pending entries").
 */
const blockingOptions: Partial<RedisOptions> = { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 };

function duplicateForReads(redis: RedisClient): RedisClient {
  const copy = redis instanceof Cluster ? redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, ...blockingOptions } }) : redis.duplicate(blockingOptions);
  return copy as RedisClient;
}

/**
 * The stop, pause and blocking-read plumbing of a stream consumer's loop (the partition consumer,
 * the recorder). A read that fails (connection dropped, or silent past BLOCK and a grace) rejects,
 * so the consumer claims its pending entries again.
 */
export class ConsumerLoop {
  private stopped = false;
  private reading = false;
  private blocking: RedisClient | undefined;
  /** The blocking connection's CLIENT ID on a single node, for interrupt(). */
  private blockingId: number | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly redis: RedisClient) {}

  /** True once stop() was called: the loop should finish its work in flight and end. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Runs the loop's body with the blocking connection open, and closes it after. */
  async run(body: () => Promise<void>): Promise<void> {
    const blocking = duplicateForReads(this.redis);
    blocking.on('error', () => {
      // Failed reads surface as rejected commands, which the loop handles.
    });
    // A reconnected connection has a new CLIENT ID: identify() asks again.
    blocking.on('ready', () => (this.blockingId = undefined));
    this.blocking = blocking;
    try {
      await body();
    } finally {
      blocking.disconnect();
    }
  }

  /**
   * A read on the loop's own connection, blocking up to `blockMs`; stop() abandons it (it
   * rejects), and so does a connection that drops or stays silent past `blockMs` and a grace.
   */
  async read<T>(blockMs: number, call: (blocking: RedisClient) => Promise<T>): Promise<T> {
    const blocking = this.blocking;
    if (!blocking) throw new Error('ConsumerLoop.read outside run()');
    this.reading = true;
    // disconnect(true) reconnects at once; the read in flight fails (maxRetriesPerRequest 0).
    const silent = setTimeout(() => blocking.disconnect(true), blockMs + READ_GRACE_MS);
    try {
      return await call(blocking);
    } finally {
      clearTimeout(silent);
      this.reading = false;
    }
  }

  /**
   * Learns the blocking connection's CLIENT ID (once per connection; single node only), so that
   * interrupt() can end a read of it. Call it before a read that interrupt() may have to end.
   */
  async identify(): Promise<void> {
    const blocking = this.blocking;
    if (this.blockingId !== undefined || blocking === undefined || blocking instanceof Cluster) return;
    this.blockingId = Number(await blocking.client('ID'));
  }

  /**
   * Ends a blocked read at once as if its time were up (CLIENT UNBLOCK … TIMEOUT: the read answers
   * nothing and moves no entry), so the loop's next read can name other keys. Only on a single
   * node; elsewhere, and when no read is blocked, it does nothing.
   */
  interrupt(): void {
    if (!this.reading || this.blockingId === undefined || this.redis instanceof Cluster) return;
    this.redis.client('UNBLOCK', this.blockingId, 'TIMEOUT').catch(() => undefined);
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

/**
 * Reports the IDs an XAUTOCLAIM found deleted while pending (its third reply element, as text or
 * bytes): they were read by someone and are gone without being processed. Never silent.
 */
export function reportDeleted(
  reply: unknown[],
  where: { stream: string; group: string },
  log: Logger,
  metrics: Pick<Metrics, 'lostEntries'>,
): void {
  const deleted = Array.isArray(reply[2]) ? (reply[2] as unknown[]).map(String) : [];
  if (deleted.length === 0) return;
  metrics.lostEntries.labels(where.group).inc(deleted.length);
  log.error('stream entries deleted while pending', { ...where, count: deleted.length, ids: deleted.slice(0, 20) });
}
