import { Cluster } from 'ioredis';
import type { Logger } from '../process/log.ts';
import type { Metrics } from '../process/metrics.ts';
import type { RedisClient } from '../redis/client.ts';
import { BusyGauge } from './busy.ts';
import { ConsumerLoop, RETRY_MS } from './consumer-loop.ts';
import type { StreamEntry } from './types.ts';

/** What a member may do with the group through the reader's loop: create it, claim its pending entries. */
export type Claims = Pick<ConsumerLoop, 'claim' | 'ensureGroup'>;

/** One owned partition's stream, read by a GroupReader on its behalf. */
export interface ReaderMember {
  readonly partition: number;
  readonly stream: string;
  /**
   * Gets the member ready to take batches: claims and processes its pending entries. Run when it
   * joins, after a failed read, and after a failure of its own. Never throws; false when it failed.
   */
  prepare(claims: Claims): Promise<boolean>;
  /** Processes a batch read for it. Never throws; false when it failed (it is prepared again). */
  take(entries: StreamEntry[], claims: Claims): Promise<boolean>;
}

export interface GroupReaderOptions {
  /** Shared client for non-blocking commands (and CLIENT UNBLOCK). */
  redis: RedisClient;
  group: string;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** Most entries read per stream at once. */
  batchSize: number;
  /**
   * After a read where no stream filled a batch, the wait before the next read while the process is
   * short of CPU (BusyGauge), ms (0: never).
   */
  lingerMs: number;
  /** Longest a read blocks, ms; bounds how long a newly owned partition may wait on a Cluster. */
  blockMs: number;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
}

/**
 * Reads the streams of every partition a worker owns for one consumer group with one XREADGROUP
 * per round, hands each member its entries, and reads again once every member has processed its
 * batch. Rounds keep the members in step, so their commands leave in one pipelined write and one
 * blocking connection serves them all, instead of a read, a connection and a loop per partition.
 * On a Redis Cluster a read may only name keys of one slot, so each partition gets a loop of its
 * own there (docs/architecture.md, "Consumer groups and pending entries").
 */
export class GroupReader {
  private readonly loops = new Map<string, ReaderLoop>();
  private readonly cluster: boolean;

  constructor(private readonly opts: GroupReaderOptions) {
    this.cluster = opts.redis instanceof Cluster;
  }

  /** Starts reading a member's stream in the next round. */
  join(member: ReaderMember): void {
    const key = this.cluster ? String(member.partition) : 'all';
    let loop = this.loops.get(key);
    if (!loop || loop.closing) {
      const created: ReaderLoop = new ReaderLoop(this.opts, !this.cluster, () => {
        if (this.loops.get(key) === created) this.loops.delete(key);
      });
      this.loops.set(key, created);
      loop = created;
    }
    loop.join(member);
  }

  /** Stops reading a member's stream; resolves once the batch it holds (if any) is processed. */
  leave(member: ReaderMember): Promise<void> {
    const key = this.cluster ? String(member.partition) : 'all';
    return this.loops.get(key)?.leave(member) ?? Promise.resolve();
  }
}

/** The rounds of one set of streams that a single read may name. */
class ReaderLoop {
  private readonly members = new Map<string, ReaderMember>();
  /** Members to prepare before they are read, by stream, with when they may try (ms). */
  private readonly unprepared = new Map<string, number>();
  /** The work each member is doing (preparing, or processing a batch), by stream. */
  private readonly busy = new Map<string, Promise<boolean>>();
  private readonly loop: ConsumerLoop;
  private readonly cpu = new BusyGauge();
  private done: Promise<void> | undefined;

  constructor(
    private readonly opts: GroupReaderOptions,
    /** A join or leave may cut the read in flight short (CLIENT UNBLOCK): the next names the members. */
    private readonly interruptible: boolean,
    private readonly ended: () => void,
  ) {
    const { redis, group, consumer, log, metrics } = opts;
    this.loop = new ConsumerLoop({ redis, group, consumer, log, metrics });
  }

  /** True once the last member left: a member joining now needs a new loop. */
  get closing(): boolean {
    return this.loop.stopping;
  }

  join(member: ReaderMember): void {
    this.members.set(member.stream, member);
    this.unprepared.set(member.stream, 0);
    this.done ??= this.loop
      .run({
        // A failed read's entries, if Redis ran it, are pending: every member claims them again.
        recover: async () => {
          for (const stream of this.members.keys()) this.unprepared.set(stream, 0);
        },
        turn: () => this.round(),
      })
      .finally(() => this.ended());
    if (this.interruptible) this.loop.interrupt();
  }

  async leave(member: ReaderMember): Promise<void> {
    if (this.members.get(member.stream) !== member) return;
    this.members.delete(member.stream);
    this.unprepared.delete(member.stream);
    // A read in flight could still take entries for it, to wait pending for the next owner's claim.
    if (this.interruptible) this.loop.interrupt();
    await this.busy.get(member.stream);
    if (this.members.size === 0) {
      this.loop.stop();
      await this.done;
    }
  }

  private async round(): Promise<void> {
    await this.prepareDue();
    if (this.interruptible) await this.loop.identify();
    // Members that joined meanwhile are prepared first: no read was there for their join to cut short.
    const now = Date.now();
    if ([...this.unprepared.values()].some((at) => at <= now)) return;
    const streams = [...this.members.keys()].filter((stream) => !this.unprepared.has(stream));
    if (streams.length === 0) {
      await this.loop.pause(RETRY_MS);
      return;
    }
    const { batchSize, blockMs, lingerMs } = this.opts;
    const read = await this.loop.read(streams, batchSize, blockMs);
    if (read.size === 0) return;
    let full = false;
    const work: Promise<boolean>[] = [];
    for (const [stream, entries] of read) {
      const member = this.members.get(stream);
      // A member that left while the read was in flight: its entries stay pending for the owner.
      if (member === undefined || entries.length === 0) continue;
      if (entries.length >= batchSize) full = true;
      work.push(this.track(member, member.take(entries, this.loop)));
    }
    await Promise.all(work);
    // Each read and apply has a fixed cost. The next round holds what arrived while this one was
    // applied; when CPU is short, waiting a little more grows batches and buys it back, at the
    // price of latency, which an idle process does not pay (docs/performance.md, "Apply lag").
    if (!full && lingerMs > 0 && this.cpu.short) await this.loop.pause(lingerMs);
  }

  /** Prepares, all at once, the members that are due to. */
  private async prepareDue(): Promise<void> {
    const now = Date.now();
    const due = [...this.unprepared].filter(([, at]) => at <= now).map(([stream]) => this.members.get(stream));
    await Promise.all(due.map((member) => (member ? this.track(member, member.prepare(this.loop)) : true)));
  }

  /** Notes a member's work, so it can leave after it; a failure has it prepared again later. */
  private async track(member: ReaderMember, work: Promise<boolean>): Promise<boolean> {
    const { stream } = member;
    this.busy.set(stream, work);
    const ok = await work;
    this.busy.delete(stream);
    if (this.members.get(stream) !== member) return ok;
    if (ok) this.unprepared.delete(stream);
    else this.unprepared.set(stream, Date.now() + RETRY_MS);
    return ok;
  }
}
