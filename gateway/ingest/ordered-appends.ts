import type { Cluster } from 'ioredis';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';

/** Most tries of one append: as many redirections as ioredis follows by default. */
const ATTEMPTS = 16;
/** Pause before trying again after `TRYAGAIN`, `CLUSTERDOWN` or a closed connection, ms. */
const PAUSE_MS = 100;

interface Pending {
  json: string;
  /** The entry's writer stamp (`w`, `n`). */
  writer: string | undefined;
  seq: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** What a failed append says to do next; null: give up (the write goes to the journal). */
type Redirection = { kind: 'moved' } | { kind: 'ask'; address: string } | { kind: 'pause' };

/**
 * A gateway writer's appends on a Redis Cluster (docs/architecture.md#cluster-redirections): per
 * partition stream at most one group of `XADD`s in flight, in one transaction, the next group
 * being what queued meanwhile, so an append is sent only once every earlier one to its stream is
 * in Redis. It
 * follows `MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN` and closed connections itself, at most
 * ATTEMPTS times, on a client that follows none (ioredis would resend a command after its
 * timeout had failed it, behind later ones). When a group fails, it and everything queued behind
 * it fail: the writer puts them in its journal in order. So no entry lands after a later one of
 * the same writer and partition, which the apply would take for a copy
 * (docs/architecture.md#copies-in-the-log).
 */
export class OrderedAppends {
  private readonly queues = new Map<string, Pending[]>();

  /**
   * `replicas`: how many replicas each group waits for (`WAIT`, at most `waitMs`) before its writes
   * are accepted; 0 waits for none. Fewer within `waitMs` fails the group: its writes go to the
   * journal, which the failover cannot lose (docs/reliability.md#redis-cluster).
   */
  constructor(
    private readonly cluster: Cluster,
    private readonly topology: Topology,
    private readonly replicas: number,
    private readonly waitMs: number,
  ) {}

  /** Appends entries in order (a batch is accepted only when all are appended). */
  async appendEntries(entries: IngestEntry[], lines?: readonly string[]): Promise<void> {
    await Promise.all(
      entries.map((e, i) => this.append(this.topology.ingest(this.topology.partitionOf(e.project, e.external_id)), lines?.[i] ?? JSON.stringify(e), e.w, e.n ?? 0)),
    );
  }

  private append(key: string, json: string, writer: string | undefined, seq: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const pending = { json, writer, seq, resolve, reject };
      const queue = this.queues.get(key);
      if (queue) return void queue.push(pending);
      this.queues.set(key, [pending]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    for (;;) {
      const group = this.queues.get(key) ?? [];
      if (group.length === 0) return void this.queues.delete(key);
      this.queues.set(key, []);
      try {
        await this.send(key, inWriterOrder(group));
      } catch (err) {
        const behind = this.queues.get(key) ?? [];
        this.queues.delete(key);
        for (const p of behind) p.reject(err);
        return;
      }
    }
  }

  /** Sends a group, resolving its appends once Redis has them all; throws when it cannot. */
  private async send(key: string, group: Pending[]): Promise<void> {
    let asking: string | null = null;
    for (let attempt = 1; ; attempt++) {
      const err = await this.sendGroup(asking, key, group);
      if (err === null) return group.forEach((p) => p.resolve());
      const next = redirection(err);
      if (next === null || attempt >= ATTEMPTS) {
        for (const p of group) p.reject(err);
        throw err;
      }
      asking = next.kind === 'ask' ? next.address : null;
      if (next.kind === 'pause') await new Promise((r) => setTimeout(r, PAUSE_MS));
      if (next.kind !== 'ask') await new Promise<void>((resolve) => this.cluster.refreshSlotsCache(() => resolve()));
    }
  }

  /**
   * One pipeline on one connection: the group's `XADD`s in one transaction (after `ASKING` when
   * `asking` names the node the slot is being imported into), then `WAIT` when replicas are waited
   * for. All or none: a node's view of the cluster can change between two commands, and a group
   * whose first entries were refused and later ones taken would break the order. Null when all are
   * in Redis (and on enough replicas), else why not.
   */
  private async sendGroup(asking: string | null, key: string, group: Pending[]): Promise<unknown> {
    const node = asking === null ? this.cluster : this.cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === asking);
    if (!node) return new Error(`CLUSTERDOWN no connection to ${asking}`);
    const pipeline = node.pipeline();
    if (asking !== null) pipeline.asking();
    pipeline.call('multi');
    for (const p of group) pipeline.xadd(key, '*', 'd', p.json);
    pipeline.call('exec');
    if (this.replicas > 0) pipeline.call('wait', this.replicas, this.waitMs);
    try {
      const replies = (await pipeline.exec()) ?? [];
      // The first error says why (a queued XADD's MOVED, say, before EXEC's EXECABORT).
      const failed = replies.find(([err]) => err !== null)?.[0];
      if (failed) return failed;
      const acked = this.replicas > 0 ? Number(replies.at(-1)?.[1]) : 0;
      // Fewer replicas than asked for: a failover could lose the entries.
      return acked < this.replicas ? new Error(`NOREPLICAS ${acked} of ${this.replicas} replicas have the entries`) : null;
    } catch (err) {
      return err;
    }
  }
}

/** How to go on after a failed append: follow the redirection, or pause and read the slots again. */
function redirection(err: unknown): Redirection | null {
  const message = err instanceof Error ? err.message : String(err);
  const ask = /\bASK \d+ (\S+)/.exec(message);
  if (ask?.[1] !== undefined) return { kind: 'ask', address: ask[1] };
  if (/\bMOVED \d+ /.test(message)) return { kind: 'moved' };
  if (/\b(TRYAGAIN|CLUSTERDOWN)\b|Connection is closed|Cluster isn't ready|Stream isn't writeable/.test(message)) return { kind: 'pause' };
  return null;
}

/**
 * The group with each writer's entries in sequence order, in the places its entries took: a
 * replayed entry can queue behind a later one of the same writer (the journal's replay and the
 * writes that follow it meet in one queue), and the apply would skip it as a copy.
 */
function inWriterOrder(group: Pending[]): Pending[] {
  const byWriter = new Map<string | undefined, Pending[]>();
  for (const p of group) {
    const list = byWriter.get(p.writer);
    if (list) list.push(p);
    else byWriter.set(p.writer, [p]);
  }
  const sorted = new Map([...byWriter].map(([w, ps]) => [w, { next: 0, list: ps.sort((a, b) => a.seq - b.seq) }]));
  return group.map((p) => {
    const s = sorted.get(p.writer);
    return s?.list[s.next++] ?? p;
  });
}

