import { Cluster, type RedisOptions } from 'ioredis';
import type { Logger } from '../process/log.ts';
import type { Metrics } from '../process/metrics.ts';
import type { RedisClient } from '../redis/client.ts';
import { scripts } from '../scripts/registry.ts';
import { Pause } from './pause.ts';
import { toEntries, toRawEntries, type RawStreamEntry, type StreamEntry } from './types.ts';

/** Longest a read blocks unless its consumer says otherwise, ms. */
export const BLOCK_MS = 2000;
/** Pause after a failure before the consumer recovers and goes on, ms. */
export const RETRY_MS = 500;
/** How long past its BLOCK time a read may go unanswered before it fails and its connection is closed, ms. */
const READ_GRACE_MS = 5000;

/**
 * A group read moves entries to the pending list even if its reply is lost, so reads are never
 * resent after a reconnect and fail when the connection drops; the consumer then recovers: it
 * claims its pending entries again (docs/architecture.md, "Consumer groups and pending entries").
 * A Cluster client's command timeout is left out: a read blocks longer, and its own grace
 * (READ_GRACE_MS) bounds it.
 */
const blockingOptions: Partial<RedisOptions> = { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 };

function duplicateForReads(redis: RedisClient): RedisClient {
  if (!(redis instanceof Cluster)) return redis.duplicate(blockingOptions) as RedisClient;
  const nodeOptions: RedisOptions = { ...redis.options.redisOptions, ...blockingOptions };
  delete nodeOptions.commandTimeout;
  const copy = redis.duplicate([], { redisOptions: nodeOptions });
  return copy as RedisClient;
}

/** What a stream consumer does; ConsumerLoop.run drives it. */
export interface ConsumerBody {
  /**
   * Gets ready to read: claims and handles what the group has pending for it (ConsumerLoop.claim),
   * and whatever else a crash or a failure may have left half done. Runs first, after every
   * failure (a read whose reply was lost left entries pending), and when asked (recoverSoon).
   */
  recover(): Promise<void>;
  /** One turn: reads what there is (ConsumerLoop.read) and handles it. */
  turn(): Promise<void>;
}

export interface ConsumerLoopOptions {
  /** Shared client for non-blocking commands. */
  redis: RedisClient;
  group: string;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
  /** What names this consumer in its log lines (its stream or partition). */
  fields?: Record<string, unknown>;
  /** Pause after a failure, ms (RETRY_MS). */
  retryMs?: number;
}

/** How a claim takes over pending entries. */
export interface ClaimOptions {
  /** Only entries idle at least this long (0: all, for a partition this worker owns). */
  minIdleMs?: number;
  /** How many per page, asked before each page. */
  count(): number;
}

/** Entries of one read, by stream. */
export type Entries<E> = Map<string, E[]>;

type Decode<E> = (reply: unknown) => E[];

/**
 * The loop of every stream consumer of the engine (apply, recorder, fan-out, dispatch): recover,
 * then turns of read and handle until stopped; a failure is logged, and after a pause the
 * consumer recovers before it reads on, so handling a lost read is written once. Reads go through
 * a blocking connection of the loop's own; claims and group creation through the shared client.
 */
export class ConsumerLoop {
  /** Aborted by stop(): the one record of whether the loop stops, which work in flight may wait on. */
  private readonly stopper = new AbortController();
  private reading = false;
  private recovering = true;
  private blocking: RedisClient | undefined;
  /** The blocking connection's CLIENT ID on a single node, for interrupt(). */
  private blockingId: number | undefined;
  /** Fails the read in flight at once, whatever its connection does. */
  private abandonRead: ((err: Error) => void) | undefined;
  private readonly pausing = new Pause();

  constructor(private readonly opts: ConsumerLoopOptions) {}

  /** True once stop() was called: the consumer should finish its work in flight and end. */
  get stopping(): boolean {
    return this.stopper.signal.aborted;
  }

  /** Aborts when stop() is called: for work of the consumer that waits on its own (a retry). */
  get stopSignal(): AbortSignal {
    return this.stopper.signal;
  }

  /** Runs `body` until stop(), with a blocking connection open, and closes it after. */
  async run(body: ConsumerBody): Promise<void> {
    this.blocking = this.openBlocking();
    try {
      while (!this.stopping) {
        try {
          if (this.recovering) {
            this.recovering = false;
            await body.recover();
          }
          await body.turn();
        } catch (err) {
          this.recovering = true;
          if (this.stopping) break;
          this.opts.log.warn('stream consumer failed; it recovers and goes on', { group: this.opts.group, ...this.opts.fields, err });
          await this.pause(this.opts.retryMs ?? RETRY_MS);
        }
      }
    } finally {
      this.blocking.disconnect();
    }
  }

  /** Has the consumer recover before its next turn: something it handled was left pending. */
  recoverSoon(): void {
    this.recovering = true;
  }

  /** Creates the group on `stream` (and the stream) from its start or after `from`, unless it exists. */
  ensureGroup(stream: string, from = '0'): Promise<void> {
    return ensureGroup(this.opts.redis, stream, this.opts.group, from);
  }

  /**
   * One group read of new entries of `streams`, at most `count` of each, blocking up to `blockMs`
   * when given. stop() abandons it (it rejects), and so does a connection that drops or stays
   * silent past the block and a grace; the loop then recovers.
   */
  read(streams: readonly string[], count: number, blockMs?: number): Promise<Entries<StreamEntry>> {
    return this.readWith('xreadgroup', toEntries, streams, count, blockMs);
  }

  /** As read, with every value left as bytes (the recorder hands them to ClickHouse undecoded). */
  readRaw(streams: readonly string[], count: number, blockMs?: number): Promise<Entries<RawStreamEntry>> {
    return this.readWith('xreadgroupBuffer', toRawEntries, streams, count, blockMs);
  }

  /**
   * Takes over the entries the group has pending on `stream` (any consumer's, idle long enough) a
   * page at a time, from the oldest, handing each page to `handle` before the next, until none is
   * left, the loop stops, or `handle` answers false.
   */
  claim(stream: string, options: ClaimOptions, handle: (entries: StreamEntry[]) => Promise<boolean | void>): Promise<void> {
    return this.claimWith('xautoclaim', toEntries, stream, options, handle);
  }

  /** As claim, with every value left as bytes. */
  claimRaw(stream: string, options: ClaimOptions, handle: (entries: RawStreamEntry[]) => Promise<boolean | void>): Promise<void> {
    return this.claimWith('xautoclaimBuffer', toRawEntries, stream, options, handle);
  }

  /** Acknowledges handled entries of `stream` and deletes them: nothing else reads them. */
  async settle(stream: string, ids: readonly string[]): Promise<void> {
    await this.opts.redis.xack(stream, this.opts.group, ...ids);
    await this.opts.redis.xdel(stream, ...ids);
  }

  /** Resets the idle time of an entry this consumer is still working on, so no claim takes it over. */
  async keepFresh(stream: string, id: string): Promise<void> {
    await this.opts.redis.xclaim(stream, this.opts.group, this.opts.consumer, 0, id, 'JUSTID');
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
   * nothing and moves no entry), so the next read can name other keys. Only on a single node;
   * elsewhere, and when no read is blocked, it does nothing.
   */
  interrupt(): void {
    if (!this.reading || this.blockingId === undefined || this.opts.redis instanceof Cluster) return;
    this.opts.redis.client('UNBLOCK', this.blockingId, 'TIMEOUT').catch(() => undefined);
  }

  stop(): void {
    if (this.stopping) return;
    this.stopper.abort();
    this.abandonRead?.(new Error('the consumer stopped'));
    this.pausing.wake();
  }

  /** Ends the pause in progress, if any, as if its time were up. */
  wake(): void {
    this.pausing.wake();
  }

  /** Waits `ms`, or less when the loop stops or is woken meanwhile. */
  pause(ms: number): Promise<void> {
    return this.stopping ? Promise.resolve() : this.pausing.wait(ms);
  }

  private openBlocking(): RedisClient {
    const blocking = duplicateForReads(this.opts.redis);
    blocking.on('error', () => {
      // Failed reads surface as rejected commands, which the loop handles.
    });
    // A reconnected connection has a new CLIENT ID: identify() asks again.
    blocking.on('ready', () => {
      if (this.blocking === blocking) this.blockingId = undefined;
    });
    return blocking;
  }

  /**
   * Closes the connection of a failed or abandoned read for good, and the next read gets a new
   * one. A read may wait unsent in a Cluster client's queue (a stop or a failover closed its
   * node's connection): ioredis never fails it there, and a reconnect would send it late.
   */
  private dropBlocking(blocking: RedisClient): void {
    blocking.disconnect();
    if (this.blocking !== blocking || this.stopping) return;
    this.blocking = this.openBlocking();
    this.blockingId = undefined;
  }

  private async readWith<E>(
    command: 'xreadgroup' | 'xreadgroupBuffer',
    decode: Decode<E>,
    streams: readonly string[],
    count: number,
    blockMs: number | undefined,
  ): Promise<Entries<E>> {
    const blocking = this.blocking;
    if (!blocking) throw new Error('ConsumerLoop.read outside run()');
    const { group, consumer } = this.opts;
    const block = blockMs === undefined ? [] : ['BLOCK', blockMs];
    const args = ['GROUP', group, consumer, 'COUNT', count, ...block, 'STREAMS', ...streams, ...streams.map(() => '>')];
    const abandoned = new Promise<never>((_, reject) => (this.abandonRead = reject));
    const silentMs = (blockMs ?? 0) + READ_GRACE_MS;
    const silent = setTimeout(() => this.abandonRead?.(new Error(`group read unanswered after ${silentMs} ms`)), silentMs);
    this.reading = true;
    let reply: unknown;
    try {
      const sent = command === 'xreadgroup' ? blocking.xreadgroup(...(args as Parameters<RedisClient['xreadgroup']>)) : blocking.xreadgroupBuffer(...args);
      reply = await Promise.race([sent, abandoned]);
    } catch (err) {
      this.dropBlocking(blocking);
      throw err;
    } finally {
      clearTimeout(silent);
      this.reading = false;
      this.abandonRead = undefined;
    }
    const out: Entries<E> = new Map();
    for (const item of Array.isArray(reply) ? (reply as unknown[]) : []) {
      const [stream, items] = item as [unknown, unknown];
      out.set(Buffer.isBuffer(stream) ? stream.toString('utf8') : String(stream), decode(items));
    }
    return out;
  }

  private async claimWith<E>(
    command: 'xautoclaim' | 'xautoclaimBuffer',
    decode: Decode<E>,
    stream: string,
    options: ClaimOptions,
    handle: (entries: E[]) => Promise<boolean | void>,
  ): Promise<void> {
    const { redis, group, consumer, log, metrics } = this.opts;
    let cursor = '0-0';
    do {
      const args = [stream, group, consumer, options.minIdleMs ?? 0, cursor, 'COUNT', options.count()] as const;
      const reply = (command === 'xautoclaim' ? await redis.xautoclaim(...args) : await redis.xautoclaimBuffer(...args)) as unknown[];
      reportDeleted(reply, stream, group, log, metrics);
      const next = reply[0];
      cursor = Buffer.isBuffer(next) ? next.toString('latin1') : typeof next === 'string' ? next : '0-0';
      const entries = decode(reply[1]);
      if (entries.length > 0 && (await handle(entries)) === false) return;
    } while (cursor !== '0-0' && !this.stopping);
  }
}

/** Creates consumer group `group` on `stream` (and the stream) from its start or after `from`, unless it exists; at maxmemory too. */
export async function ensureGroup(redis: RedisClient, stream: string, group: string, from = '0'): Promise<void> {
  await scripts.createGroup(redis, { keys: { stream }, args: { group, from } });
}

/**
 * Reports the IDs an XAUTOCLAIM found deleted while pending (its third reply element, as text or
 * bytes): they were read by someone and are gone without being processed. Never silent.
 */
function reportDeleted(reply: unknown[], stream: string, group: string, log: Logger, metrics: Pick<Metrics, 'lostEntries'>): void {
  const deleted = Array.isArray(reply[2]) ? (reply[2] as unknown[]).map(String) : [];
  if (deleted.length === 0) return;
  metrics.lostEntries.labels(group).inc(deleted.length);
  log.error('stream entries deleted while pending', { stream, group, count: deleted.length, ids: deleted.slice(0, 20) });
}
