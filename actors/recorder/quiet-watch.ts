import { Cluster } from 'ioredis';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { Pause } from '../../engine/infra/runner/pause.ts';
import { RecorderLimits } from './limits.ts';

/** A partition holding batches until they fall due: hurry() makes them due now. */
export interface QuietHolder {
  hurry(): void;
}

export interface QuietWatchOptions {
  /** The role's shared client; the watch reads on a connection of its own. */
  redis: RedisClient;
  log: Logger;
  limits?: Readonly<RecorderLimits>;
}

/**
 * Sends the process's batches early when their streams go quiet: while partitions hold batches
 * waiting to fall due, the watch waits (one blocking XREAD for a new entry of any stream whose
 * batch is held) and, when none came for `quietMs`, has every partition holding batches read what
 * is left and insert now, together. The end of a load is recorded in a fraction of a linger, and
 * a steady load costs one look every `quietMs` for the whole process (Redis registers the read on
 * each stream it names: about 2 µs a stream). After an early round the watch rests half a linger,
 * so rounds come at most twice as often as the linger alone makes them. A Redis Cluster keeps
 * each partition in a slot of its own, where one read cannot name them all: there the batches
 * wait for their time (docs/architecture.md, "The recorder").
 */
export class QuietWatch {
  private readonly limits: Readonly<RecorderLimits>;
  /** Who holds batches, with the streams of the batches each holds. */
  private readonly holders = new Map<QuietHolder, readonly string[]>();
  private readonly resting = new Pause();
  private reader: RedisClient | undefined;
  private running = false;
  private stopped = false;

  constructor(private readonly opts: QuietWatchOptions) {
    this.limits = opts.limits ?? RecorderLimits;
  }

  /** `holder` waits for its batches of `streams` to fall due: it is hurried when they go quiet first. */
  hold(holder: QuietHolder, streams: readonly string[]): void {
    if (this.stopped || this.opts.redis instanceof Cluster) return;
    this.holders.set(holder, streams);
    if (!this.running) void this.run();
  }

  /** `holder` no longer waits (its batches fell due, or it stops). */
  release(holder: QuietHolder): void {
    this.holders.delete(holder);
  }

  stop(): void {
    this.stopped = true;
    this.holders.clear();
    this.resting.wake();
    this.reader?.disconnect();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.holders.size > 0 && !this.stopped) {
        const quiet = await this.quietFor(this.limits.quietMs);
        if (this.stopped) return;
        if (quiet) {
          const hurried = [...this.holders.keys()];
          this.holders.clear();
          for (const holder of hurried) holder.hurry();
        }
        // Rests after an early round; after entries came, looks again once more may have come.
        await this.resting.wait(quiet ? Math.floor(this.limits.lingerMs / 2) : this.limits.quietMs);
      }
    } finally {
      this.running = false;
    }
  }

  /** Whether no stream of a held batch got an entry during `ms` (false when the look failed). */
  private async quietFor(ms: number): Promise<boolean> {
    const streams = [...new Set([...this.holders.values()].flat())];
    if (streams.length === 0) return false;
    this.reader ??= this.openReader();
    try {
      const reply = await this.reader.xread('COUNT', 1, 'BLOCK', ms, 'STREAMS', ...streams, ...streams.map(() => '$'));
      return reply === null;
    } catch (err) {
      if (!this.stopped) this.opts.log.warn('recorder quiet watch failed; batches wait for their time', { err });
      await this.resting.wait(this.limits.retryMs);
      return false;
    }
  }

  private openReader(): RedisClient {
    const reader = this.opts.redis.duplicate() as RedisClient;
    reader.on('error', () => {
      // A failed look rejects, and quietFor reports it.
    });
    return reader;
  }
}
