import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { OverloadedError, UnavailableError } from '../../schemas/errors.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { appendEntries } from '../../engine/infra/redis/append.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { OrderedAppends } from './ordered-appends.ts';
import type { Admission } from './pressure.ts';
import { fileSize, readJournal, removeFile, type SpillJournal } from './spill-journal.ts';

const replayChunkBytes = 4 * 1024 * 1024;
/** The smallest replay chunk: the largest line (a body is at most 1 MiB) always fits in one. */
const minReplayChunkBytes = 1024 * 1024;
/** Retry-After of `overloaded`: the workers need seconds, not milliseconds, to make room. */
export const OVERLOADED_RETRY_S = 5;
/** How long after refusing a write for overload the gateway still says it refuses (/readyz). */
const REFUSING_FOR_MS = 5000;
/** The journal can no longer take an SDK body (docs/api.md#limits): it refuses. */
const SDK_BODY_BYTES = 64 * 1024;

/** Why writes go to the journal: Redis cannot be reached, or it is past its memory watermark. */
type SpillCause = 'unreachable' | 'overloaded';

/**
 * Why a buffered write got 503 (svc_refused_writes_total): `unavailable`, Redis unreachable and the
 * journal cannot take it; `overloaded`, Redis past its watermark and the journal full; `live_state`,
 * Redis past its watermark and waiting makes no room for it.
 */
export type RefusalReason = 'overloaded' | 'live_state' | 'unavailable';

const alwaysAdmits: Admission = { admits: true, appended: () => {}, room: () => Infinity, spillRoom: () => Infinity, describe: () => '', describeNoRoom: () => '' };

export interface IngestWriterOptions {
  /** How often a spilling writer checks whether Redis is back, ms (default 250). */
  replayEveryMs?: number;
  /** Whether the gateway a journal is named after still runs (its journal is no orphan); default: none does. */
  isLive?: (name: string) => boolean;
  /** How full Redis is (gateway/ingest/pressure.ts); default: always room. */
  admission?: Admission;
  /** Told of each write refused with 503, by reason. */
  refused?: (reason: RefusalReason) => void;
  /** On a Cluster, the replicas each append waits for, and for how long at most, ms (gateway/ingest/ordered-appends.ts). */
  replicas?: { count: number; waitMs: number };
}

/**
 * Where a buffered write becomes durable: the user's partition stream, or the spill journal while
 * Redis is unreachable or past its memory watermark (then every later write spills too until the
 * replay, so order holds); the replay waits for the low watermark. Past the watermark the journal
 * takes only what draining the workers' backlog makes room for; the rest is refused `overloaded`.
 * Each entry carries this writer's id and sequence (`w`, `n`) so copies apply once
 * (docs/architecture.md, "Copies in the log", "The spill journal and its replay" and "Admission
 * before the limit").
 */
export class IngestWriter {
  /** This writer's id in the entries it stamps (unique per process). */
  private readonly writerId = randomBytes(8).toString('base64url');
  private sequence = 0;
  /** Settles once every write so far is in Redis, queued in the journal, or refused. */
  private placed: Promise<void> = Promise.resolve();
  private spilling = false;
  private cause: SpillCause = 'unreachable';
  private refusedAt = 0;
  private lastRefusal = '';
  /** Writes bound for the journal that wait for earlier ones to be placed first. */
  private toJournal = 0;
  private replaying = false;
  private replayOffset = 0;
  /** Journals adopted at start, oldest first, replayed before this process's own. */
  private orphans: { path: string; bytes: number }[] = [];
  /** How far the first adopted journal is replayed. */
  private orphanOffset = 0;
  private timer: NodeJS.Timeout | null = null;

  private readonly admission: Admission;
  /** On a Cluster, appends that follow redirections in order; on one node, its connection keeps the order. */
  private readonly ordered: OrderedAppends | null;

  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
    private readonly journal: SpillJournal,
    private readonly log: Logger,
    private readonly options: IngestWriterOptions = {},
  ) {
    this.admission = options.admission ?? alwaysAdmits;
    const replicas = options.replicas ?? { count: 0, waitMs: 0 };
    this.ordered = redis instanceof Cluster ? new OrderedAppends(redis, topology, replicas.count, replicas.waitMs) : null;
  }

  /** True while writes go to the spill journal. */
  get isSpilling(): boolean {
    return this.spilling;
  }

  /**
   * Why buffered writes are refused now for overload (`/readyz`), or null while they are taken:
   * while writes are held back, a refusal in the last few seconds, or an SDK body that would be
   * refused now.
   */
  refusing(): string | null {
    const cause = this.journalCause();
    if (cause !== 'overloaded') return null;
    if (Date.now() - this.refusedAt < REFUSING_FOR_MS) return this.lastRefusal;
    return this.overloadRefusal(SDK_BODY_BYTES, cause)?.message ?? null;
  }

  /** Adopts journals a crashed gateway left behind (replayed before anything new) and starts replaying. */
  async start(): Promise<void> {
    const adopted = await this.journal.adoptOrphans(this.options.isLive ?? (() => false));
    this.orphans = await Promise.all(adopted.map(async (path) => ({ path, bytes: await fileSize(path) })));
    if (this.orphans.length > 0) {
      this.spilling = true;
      this.log.warn('replaying spill journals left by an earlier process', { files: this.orphans.length });
    }
    this.timer = setInterval(() => void this.replay(), this.options.replayEveryMs ?? 250);
    this.timer.unref();
    await this.replay();
  }

  /**
   * Resolves once the entries are durable, in Redis or in the journal; throws UnavailableError when
   * neither. Stamps each entry with this writer's id and sequence (`w`, `n`).
   */
  async write(entries: IngestEntry[]): Promise<void> {
    // Stamped in place: the entries are the request's own, built for this write.
    for (const e of entries) {
      e.w = this.writerId;
      e.n = this.sequence++;
    }
    const earlier = this.placed;
    let place = (): void => {};
    const own = new Promise<void>((resolve) => (place = resolve));
    // Placed only once every earlier write is too: a write taken by Redis while an earlier one
    // still waits to spill must not let a later one into the journal before that earlier one.
    this.placed = Promise.all([earlier, own]).then(() => undefined);
    try {
      await this.writeInOrder(entries, earlier, place);
    } finally {
      place();
    }
  }

  /** `place` is called once the write is queued in the journal: later writes may queue behind it. */
  private async writeInOrder(entries: IngestEntry[], earlier: Promise<void>, place: () => void): Promise<void> {
    const lines = entries.map((e) => JSON.stringify(e));
    if (!this.spilling && this.redis.status === 'ready' && this.admission.admits) {
      try {
        await this.append(entries, lines);
        this.admission.appended(lines.reduce((n, l) => n + l.length, 0));
        return;
      } catch (err) {
        this.startSpilling(isOutOfMemory(err) ? 'overloaded' : 'unreachable', err);
      }
    } else if (this.redis.status !== 'ready') {
      this.startSpilling('unreachable', new Error(`redis ${this.redis.status}`));
    } else if (!this.admission.admits) {
      this.startSpilling('overloaded', new Error(this.admission.describe()));
    }
    // An earlier append may still be in flight, to fail later: the journal keeps sequence order.
    // Until this write is in the journal, the replay may not switch back to Redis: a later write
    // would reach Redis before it.
    this.toJournal++;
    let appended: Promise<void>;
    try {
      await earlier;
      this.refuseUnlessRoom(lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0));
      appended = this.journal.append(lines);
    } finally {
      this.toJournal--;
    }
    // Queued in order; the fsync it waits for is shared with the writes queued behind it.
    place();
    try {
      await appended;
    } catch (err) {
      this.log.error('spill journal append failed', { err });
      this.options.refused?.('unavailable');
      throw new UnavailableError('Redis is unreachable and the spill journal cannot be written');
    }
  }

  /** Throws when the journal may not take `bytes` more: full, or (past the watermark) more than waiting makes room for. */
  private refuseUnlessRoom(bytes: number): void {
    const refusal = this.overloadRefusal(bytes, this.cause);
    if (refusal !== null) {
      this.options.refused?.(refusal.reason);
      this.refusedAt = Date.now();
      this.lastRefusal = refusal.message;
      throw new OverloadedError(refusal.message, OVERLOADED_RETRY_S);
    }
    if (!this.journal.fits(bytes)) {
      this.options.refused?.('unavailable');
      throw new UnavailableError('Redis is unreachable and the spill journal is full');
    }
  }

  /**
   * Why a write of `bytes` bound for the journal for `cause` is refused `overloaded`, or null. While Redis
   * answers but is past its watermark, the journal holds only what draining the workers' backlog
   * makes room for: a 202 never waits on memory that nothing will free. Redis unreachable, the
   * journal takes writes until it is full.
   */
  private overloadRefusal(bytes: number, cause: SpillCause | null): { reason: RefusalReason; message: string } | null {
    if (cause !== 'overloaded') return null;
    const retry = 'Retry later; what was accepted before is still applied.';
    if (!this.journal.fits(bytes)) {
      return { reason: 'overloaded', message: `Buffered writes are refused: ${this.admission.describe()}, and this gateway's spill journal is full. ${retry}` };
    }
    if (this.redis.status !== 'ready' || this.admission.admits) return null;
    const held = this.unreplayed();
    if (held + bytes <= this.admission.spillRoom()) return null;
    return { reason: 'live_state', message: `Buffered writes are refused: ${this.admission.describeNoRoom(held)}. ${retry}` };
  }

  /** Why a write sent now would go to the journal, or null when it would go to Redis. */
  private journalCause(): SpillCause | null {
    if (this.redis.status !== 'ready') return 'unreachable';
    if (!this.admission.admits) return 'overloaded';
    return this.spilling ? this.cause : null;
  }

  /** Journal bytes not yet replayed into Redis: the rest of the adopted files, then this process's own. */
  private unreplayed(): number {
    const adopted = this.orphans.reduce((n, o) => n + o.bytes, 0) - this.orphanOffset;
    return adopted + this.journal.size - this.replayOffset;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.journal.close().catch((err: unknown) => {
      // When its last rollback failed, refused writes stay in the file for the gateway that adopts it.
      this.log.error('spill journal close failed', { err });
    });
  }

  /** Writes go to the journal from now on; the latest cause is the one a refusal names. */
  private startSpilling(cause: SpillCause, err: unknown): void {
    this.cause = cause;
    if (this.spilling) return;
    this.spilling = true;
    if (cause === 'overloaded') this.log.warn('redis past its memory watermark; buffered writes are held back from it', { detail: this.admission.describe() });
    else this.log.warn('redis unreachable; writes go to the spill journal', { err });
  }

  /**
   * One replay pass: adopted files first, then this process's journal up to what is durable. It
   * waits while Redis is past its watermark, and appends no more than the room under it before the
   * next reading says there is more.
   */
  private async replay(): Promise<void> {
    if (!this.spilling || this.replaying || this.redis.status !== 'ready' || !this.admission.admits) return;
    this.replaying = true;
    try {
      while (this.orphans[0] !== undefined) {
        const { path } = this.orphans[0];
        for (;;) {
          if (!this.admission.admits) return;
          const chunk = await readJournal(path, this.orphanOffset, this.chunkBytes());
          if (chunk.lines.length === 0) break;
          await this.appendLines(chunk.lines);
          this.orphanOffset = chunk.next;
        }
        await removeFile(path);
        this.orphans.shift();
        this.orphanOffset = 0;
      }
      // Only up to what is durable: bytes past it may belong to a commit whose fsync is still
      // running and may yet fail, and whose writes are then refused.
      while (this.replayOffset < this.journal.durable) {
        if (!this.admission.admits) return;
        const chunk = await readJournal(this.journal.path, this.replayOffset, Math.min(this.chunkBytes(), this.journal.durable - this.replayOffset));
        await this.appendLines(chunk.lines);
        this.replayOffset = chunk.next;
      }
      this.finishIfDrained();
    } catch (err) {
      this.log.warn('spill replay paused', { err });
    } finally {
      this.replaying = false;
    }
  }

  /**
   * Switches back to Redis when the whole journal is in Redis, no append waits for an fsync and no
   * write waits to be appended.
   * Synchronous, so no write can slip between the check, the truncation and the switch.
   */
  private finishIfDrained(): void {
    if (this.toJournal > 0 || !this.journal.idle || this.replayOffset !== this.journal.durable) return;
    this.journal.clearSync();
    this.replayOffset = 0;
    this.spilling = false;
    this.log.info('spill journal replayed; writes go to Redis again');
  }

  /** A replay chunk: at most the room under the high watermark, and never less than one line. */
  private chunkBytes(): number {
    return Math.max(minReplayChunkBytes, Math.min(replayChunkBytes, this.admission.room()));
  }

  private async appendLines(lines: string[]): Promise<void> {
    const entries: IngestEntry[] = [];
    for (const line of lines) {
      try {
        entries.push(JSON.parse(line) as IngestEntry);
      } catch {
        this.log.error('skipping an unreadable spill journal line', { line: line.slice(0, 200) });
      }
    }
    await this.append(entries);
    this.admission.appended(lines.reduce((n, l) => n + l.length, 0));
  }

  private async append(entries: IngestEntry[], lines?: readonly string[]): Promise<void> {
    if (this.ordered) await this.ordered.appendEntries(entries, lines);
    else await appendEntries(this.redis, this.topology, entries, lines);
  }
}

/** Redis refused a write at maxmemory (`OOM command not allowed ...`). */
function isOutOfMemory(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM ');
}
