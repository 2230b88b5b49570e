import type { Cluster } from 'ioredis';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { Topology } from '../../engine/topology.ts';

/** Most tries of one append: as many redirections as ioredis follows by default. */
const ATTEMPTS = 16;
/** Pause before trying again after `TRYAGAIN`, `CLUSTERDOWN` or a closed connection, ms. */
const PAUSE_MS = 100;

interface Pending {
  json: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** What a failed append says to do next; null: give up (the write goes to the journal). */
type Redirection = { kind: 'moved' } | { kind: 'ask'; address: string } | { kind: 'pause' };

/**
 * A gateway writer's appends on a Redis Cluster (docs/architecture.md#cluster-redirections): per
 * partition stream at most one group of `XADD`s in flight, the next group being what queued
 * meanwhile, so an append is sent only once every earlier one to its stream is in Redis. It
 * follows `MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN` and closed connections itself, at most
 * ATTEMPTS times, on a client that follows none (ioredis would resend a command after its
 * timeout had failed it, behind later ones). When a group fails, it and everything queued behind
 * it fail: the writer puts them in its journal in order. So no entry lands after a later one of
 * the same writer and partition, which the apply would take for a copy
 * (docs/architecture.md#copies-in-the-log).
 */
export class OrderedAppends {
  private readonly queues = new Map<string, Pending[]>();

  constructor(
    private readonly cluster: Cluster,
    private readonly topology: Topology,
  ) {}

  /** Appends entries in order (a batch is accepted only when all are appended). */
  async appendEntries(entries: IngestEntry[], lines?: readonly string[]): Promise<void> {
    await Promise.all(entries.map((e, i) => this.append(this.topology.ingest(this.topology.partitionOf(e.project, e.external_id)), lines?.[i] ?? JSON.stringify(e))));
  }

  private append(key: string, json: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) return void queue.push({ json, resolve, reject });
      this.queues.set(key, [{ json, resolve, reject }]);
      void this.drain(key);
    });
  }

  private async drain(key: string): Promise<void> {
    for (;;) {
      const group = this.queues.get(key) ?? [];
      if (group.length === 0) return void this.queues.delete(key);
      this.queues.set(key, []);
      try {
        await this.send(key, group);
      } catch (err) {
        const behind = this.queues.get(key) ?? [];
        this.queues.delete(key);
        for (const p of behind) p.reject(err);
        return;
      }
    }
  }

  /** Sends a group, resolving each append once Redis has it; throws once one cannot be appended. */
  private async send(key: string, group: Pending[]): Promise<void> {
    let rest = group;
    let asking: string | null = null;
    for (let attempt = 1; ; attempt++) {
      const results = asking === null ? await Promise.allSettled(rest.map((p) => this.cluster.xadd(key, '*', 'd', p.json))) : await this.sendAsking(asking, key, rest);
      const failed = results.findIndex((r) => r.status === 'rejected');
      rest.slice(0, failed === -1 ? rest.length : failed).forEach((p) => p.resolve());
      if (failed === -1) return;
      rest = rest.slice(failed);
      const err = (results[failed] as PromiseRejectedResult).reason;
      const next = redirection(err);
      if (next === null || attempt >= ATTEMPTS) {
        for (const p of rest) p.reject(err);
        throw err;
      }
      asking = next.kind === 'ask' ? next.address : null;
      if (next.kind === 'pause') await new Promise((r) => setTimeout(r, PAUSE_MS));
      if (next.kind !== 'ask') await new Promise<void>((resolve) => this.cluster.refreshSlotsCache(() => resolve()));
    }
  }

  /** `ASKING` before each `XADD`, on the node the slot is being imported into. */
  private async sendAsking(address: string, key: string, group: Pending[]): Promise<PromiseSettledResult<unknown>[]> {
    const node = this.cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === address);
    if (!node) return group.map(() => ({ status: 'rejected', reason: new Error(`CLUSTERDOWN no connection to ${address}`) }));
    const pipeline = node.pipeline();
    for (const p of group) pipeline.asking().xadd(key, '*', 'd', p.json);
    const replies = (await pipeline.exec()) ?? [];
    return group.map((_, i) => {
      const [err, id] = replies[2 * i + 1] ?? [new Error('no reply')];
      return err ? { status: 'rejected', reason: err } : { status: 'fulfilled', value: id };
    });
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
