import { randomUUID } from 'node:crypto';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { LeaseView } from '../../engine/infra/runner/partition-runner.ts';
import { toRawEntries, type RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { RECORDER_GROUP } from '../../engine/infra/redis/topology.ts';
import { RecorderLimits } from './limits.ts';
import type { RecorderSink, StreamKind } from './sink.ts';
import { RecorderKeys } from './redis-keys.ts';

/** One partition's batch of one stream, handed to a round. */
export interface RoundPart {
  partition: number;
  kind: StreamKind;
  stream: string;
  entries: RawStreamEntry[];
  /** The partition's lease: a batch joins a round only while the lease surely outlasts the marks. */
  lease: LeaseView;
  /** True once the partition's consumer is stopping: a round with a part stopping gives up retrying. */
  stopping: () => boolean;
}

/** What a round's manifest records of each batch, enough to read it again from its stream. */
interface ManifestPart {
  partition: number;
  stream: string;
  first: string;
  last: string;
  count: number;
}

interface Manifest {
  kind: StreamKind;
  parts: ManifestPart[];
}

interface Waiter {
  part: RoundPart;
  resolve: (pending: number) => void;
  reject: (err: unknown) => void;
}

interface OpenRound {
  waiters: Waiter[];
  entries: number;
  timer: NodeJS.Timeout;
}

export interface RecordRoundsOptions {
  redis: RedisClient;
  topology: Topology;
  sink: Pick<RecorderSink, 'record'>;
  /** Unique per process: with a sequence number, it makes each round's token unique. */
  worker: string;
  log: Logger;
  limits?: Readonly<RecorderLimits>;
}

/** A round whose marks could not all be written: nothing was inserted, its batches may go again. */
export class RoundNotStarted extends Error {}

/** What a recovery writes where a round's manifest is missing: the round may never insert. */
const ABORTED = 'aborted';

/**
 * Inserts the due batches of many partitions together: one insert per table for a whole round,
 * instead of one per partition, so ClickHouse makes and merges one part where it made dozens.
 * A round's token is its own; before the insert, each batch's partition is marked with it and the
 * round's manifest is written, so whoever owns a partition after a crash inserts the same round
 * again under the same token (ClickHouse drops the copy) and settles its own batch; see
 * docs/architecture.md, "The recorder".
 */
export class RecordRounds {
  private readonly limits: Readonly<RecorderLimits>;
  private readonly open = new Map<StreamKind, OpenRound>();
  /** Rounds this process is inserting again, by token: its partitions of one round share one insert. */
  private readonly redoing = new Map<string, Promise<RawStreamEntry[][]>>();
  /** With the worker id and a sequence number, makes every round's token unique, restarts included. */
  private readonly instance = randomUUID();
  private sequence = 0;

  constructor(private readonly opts: RecordRoundsOptions) {
    this.limits = opts.limits ?? RecorderLimits;
  }

  /**
   * Adds a batch to the next round of its kind; resolves, once the round is inserted and the batch
   * settled, with how many entries its stream's group still has pending (RecorderConsumer claims
   * them). Rejects with RoundNotStarted when the batch was not inserted, or with the failure that
   * left it pending under its round's mark for whoever recovers the partition.
   */
  record(part: RoundPart): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let round = this.open.get(part.kind);
      if (round === undefined) {
        const timer = setTimeout(() => this.start(part.kind), this.limits.gatherMs);
        round = { waiters: [], entries: 0, timer };
        this.open.set(part.kind, round);
      }
      round.waiters.push({ part, resolve, reject });
      round.entries += part.entries.length;
      if (round.entries >= this.limits.maxRoundEntries) this.start(part.kind);
    });
  }

  /**
   * After a crash: when the partition's batch of `kind` went into a round whose manifest exists,
   * inserts that round again under its token (a copy of an insert that landed is dropped) and
   * settles the partition's own batch of it. A mark without a manifest is a round that has not
   * started its insert: the manifest's place is taken (ABORTED, so a late manifest write of its
   * owner fails and that round never inserts), the mark is cleared, and the batch is claimed as
   * any pending entries are.
   */
  async recover(partition: number, kind: StreamKind, stream: string): Promise<void> {
    const { redis, topology } = this.opts;
    const marks = topology.own(RecorderKeys).marks(partition);
    const token = await redis.hget(marks, kind);
    if (token === null) return;
    const key = topology.own(RecorderKeys).round(token);
    let json = await redis.get(key);
    if (json === null && !(await this.setOnce(key, ABORTED))) json = await redis.get(key);
    const manifest = json === null || json === ABORTED ? null : (JSON.parse(json) as Manifest);
    const own = manifest?.parts.find((p) => p.stream === stream);
    if (manifest === null || own === undefined) {
      await this.settle(partition, kind, stream, '0-0', [], token);
      return;
    }
    const parts = await this.redo(kind, token, manifest);
    const ownEntries = parts[manifest.parts.indexOf(own)] ?? [];
    await this.settle(partition, kind, stream, own.last, ownEntries, token);
    this.opts.log.info('recorder round recovered', { partition, stream: kind, round: token });
    // The last partition of the round to settle deletes its manifest; until then another may need it.
    const left = await Promise.all(manifest.parts.map((p) => redis.hget(topology.own(RecorderKeys).marks(p.partition), kind)));
    if (!left.includes(token)) await redis.del(key);
  }

  /** Inserts a round again under its token, once per process however many of its partitions recover. */
  private redo(kind: StreamKind, token: string, manifest: Manifest): Promise<RawStreamEntry[][]> {
    let running = this.redoing.get(token);
    if (running === undefined) {
      running = (async () => {
        const parts = await Promise.all(manifest.parts.map((p) => this.readPart(p)));
        const entries = parts.flat();
        if (entries.length > 0) await this.opts.sink.record(kind, entries, token);
        return parts;
      })().finally(() => this.redoing.delete(token));
      this.redoing.set(token, running);
    }
    return running;
  }

  private start(kind: StreamKind): void {
    const round = this.open.get(kind);
    if (round === undefined) return;
    this.open.delete(kind);
    clearTimeout(round.timer);
    void this.run(kind, round.waiters);
  }

  private async run(kind: StreamKind, waiters: Waiter[]): Promise<void> {
    const joined = waiters.filter((w) => {
      if (w.part.lease.remainingMs() > 0) return true;
      w.reject(new RoundNotStarted('the lease may have lapsed: the batch stays pending for the next owner'));
      return false;
    });
    if (joined.length === 0) return;
    const token = `${this.opts.worker}|${this.instance}|${kind}|${++this.sequence}`;
    try {
      await this.begin(kind, joined, token);
    } catch (err) {
      for (const w of joined) w.reject(new RoundNotStarted('the round could not be marked', { cause: err }));
      return;
    }
    try {
      await this.insert(kind, joined, token);
    } catch (err) {
      for (const w of joined) w.reject(err);
      return;
    }
    const settled = await Promise.allSettled(
      joined.map(async (w) => {
        const { partition, stream, entries } = w.part;
        w.resolve(await this.settle(partition, kind, stream, entries.at(-1)?.id ?? '0-0', entries, token));
      }),
    );
    settled.forEach((s, i) => {
      if (s.status === 'rejected') joined[i]?.reject(s.reason);
    });
    if (settled.every((s) => s.status === 'fulfilled')) {
      await this.opts.redis.del(this.opts.topology.own(RecorderKeys).round(token)).catch((err: unknown) => this.opts.log.warn('recorder round manifest left behind', { round: token, err }));
    }
  }

  /**
   * Marks every batch's partition with the round, then writes the manifest: a manifest means every
   * part carries the mark. A mark is only written where none is (a late write of a round that was
   * given up must not replace a live round's), and the manifest only where a recovery has not
   * taken its place.
   */
  private async begin(kind: StreamKind, joined: Waiter[], token: string): Promise<void> {
    const { redis, topology } = this.opts;
    const marked = await Promise.allSettled(
      joined.map(async (w) => (await scripts.markRound(redis, { keys: { marks: topology.own(RecorderKeys).marks(w.part.partition) }, args: { kind, token } })).marked),
    );
    const failed = marked.find((m) => m.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    if (marked.some((m) => m.status === 'fulfilled' && !m.value)) throw new Error('a partition still carries the mark of another round');
    // A partition whose lease lapsed meanwhile may be another's, which found the mark and no manifest.
    if (joined.some((w) => w.part.lease.remainingMs() <= 0)) throw new Error('a lease may have lapsed while the round was marked');
    const manifest: Manifest = {
      kind,
      parts: joined.map(({ part }) => ({
        partition: part.partition,
        stream: part.stream,
        first: part.entries[0]?.id ?? '0-0',
        last: part.entries.at(-1)?.id ?? '0-0',
        count: part.entries.length,
      })),
    };
    if (!(await this.setOnce(topology.own(RecorderKeys).round(token), JSON.stringify(manifest)))) {
      throw new Error('a recovery gave the round up before its manifest was written');
    }
  }

  /** SET NX with the round's lifetime (roundTtlSeconds), at maxmemory too; whether it was set. */
  private async setOnce(key: string, value: string): Promise<boolean> {
    const { set } = await scripts.setIfAbsent(this.opts.redis, { keys: { key }, args: { value, ttlMs: this.limits.roundTtlSeconds * 1000 } });
    return set;
  }

  /**
   * Inserts the round under its token until ClickHouse takes it, or a part's consumer stops (a
   * partition handed over must not wait for ClickHouse): the round is then left to recovery,
   * which inserts it under the same token.
   */
  private async insert(kind: StreamKind, joined: Waiter[], token: string): Promise<void> {
    const entries = joined.flatMap((w) => w.part.entries);
    for (;;) {
      try {
        await this.opts.sink.record(kind, entries, token);
        return;
      } catch (err) {
        if (joined.some((w) => w.part.stopping())) throw err;
        this.opts.log.warn('recorder insert failed; retrying', { stream: kind, round: token, partitions: joined.length, entries: entries.length, err });
        await new Promise((resolve) => setTimeout(resolve, this.limits.retryMs));
      }
    }
  }

  private async settle(partition: number, kind: StreamKind, stream: string, lastId: string, entries: RawStreamEntry[], token: string): Promise<number> {
    const { pending } = await scripts.settleBatch(this.opts.redis, {
      keys: { stream, marks: this.opts.topology.own(RecorderKeys).marks(partition) },
      args: { group: RECORDER_GROUP, lastId, kind, token },
      ids: entries.map((e) => e.id),
    });
    return pending;
  }

  /** A batch as its stream still holds it: all of it unless the round landed and it was settled. */
  private async readPart(part: ManifestPart): Promise<RawStreamEntry[]> {
    return toRawEntries(await this.opts.redis.xrangeBuffer(part.stream, part.first, part.last, 'COUNT', part.count));
  }
}
