import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { EngineProcess } from './engine.ts';
import { eventually } from './http.ts';
import { compare, recordedOf } from './overload.ts';
import { poll, run } from '../../bench/redis-cluster.ts';

/**
 * Topology changes of a Redis Cluster under SDK load (test/cluster/*-fault.test.ts): what the
 * cluster looks like, the load, and the exactly-once check of what the gateway accepted.
 */

export interface ClusterNode {
  id: string;
  port: number;
  primary: boolean;
  /** The primary a replica follows. */
  primaryId: string | null;
  /** Slot ranges a primary serves, inclusive. */
  slots: [number, number][];
}

/** The cluster as the node on `port` sees it (CLUSTER NODES), failed nodes left out. */
export async function clusterNodes(port: number): Promise<ClusterNode[]> {
  const nodes: ClusterNode[] = [];
  await poll(port, async (r) => {
    const text = String(await r.cluster('NODES'));
    for (const line of text.trim().split('\n')) {
      const [id = '', addr = '', flags = '', primaryId = '-', , , , , ...slots] = line.split(' ');
      if (flags.includes('fail') && !flags.includes('fail?')) continue;
      nodes.push({
        id,
        port: Number(addr.split(':')[1]?.split('@')[0]),
        primary: flags.includes('master'),
        primaryId: primaryId === '-' ? null : primaryId,
        slots: slots.filter((s) => !s.startsWith('[')).map((s) => {
          const [lo = '0', hi = lo] = s.split('-');
          return [Number(lo), Number(hi)];
        }),
      });
    }
    return true;
  });
  return nodes;
}

/** The slot of a key (CLUSTER KEYSLOT). */
export async function keySlot(port: number, key: string): Promise<number> {
  let slot = -1;
  await poll(port, async (r) => {
    slot = Number(await r.cluster('KEYSLOT', key));
    return true;
  });
  return slot;
}

/** `redis-cli --cluster reshard`: moves `slots` slots from one primary to another, key by key. */
export async function reshard(port: number, from: string, to: string, slots: number): Promise<void> {
  await run('redis-cli', ['--cluster', 'reshard', `127.0.0.1:${port}`, '--cluster-from', from, '--cluster-to', to, '--cluster-slots', String(slots), '--cluster-yes'], { maxBuffer: 64 * 1024 * 1024 });
}

/** `CLUSTER FAILOVER` on a replica: it and its primary swap roles without losing a write. */
export async function failover(replicaPort: number): Promise<void> {
  await poll(replicaPort, async (r) => (await r.cluster('FAILOVER')) === 'OK');
  await poll(replicaPort, async (r) => String(await r.role()).startsWith('master'));
}

/** SDK events from `users` users, one at a time each, numbered per user (`properties.seq`). */
export class SdkLoad {
  readonly accepted: Set<number>[];
  readonly refused: Set<number>[];
  private running = true;
  private readonly done: Promise<void[]>;

  constructor(
    private readonly url: string,
    private readonly sdkKey: string,
    users: number,
  ) {
    this.accepted = Array.from({ length: users }, () => new Set());
    this.refused = Array.from({ length: users }, () => new Set());
    this.done = Promise.all(this.accepted.map((_, user) => this.send(user)));
  }

  get acceptedCount(): number {
    return this.accepted.reduce((n, s) => n + s.size, 0);
  }

  get refusedCount(): number {
    return this.refused.reduce((n, s) => n + s.size, 0);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async send(user: number): Promise<void> {
    for (let seq = 0; this.running; seq++) {
      const status = await fetch(`${this.url}/api/sdk/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.sdkKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ external_id: `u${user}`, name: 'tick', properties: { seq } }),
        signal: AbortSignal.timeout(10_000),
      }).then(
        async (res) => (await res.arrayBuffer(), res.status),
        () => 0,
      );
      (status === 202 ? this.accepted : this.refused)[user]?.add(seq);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/** Asserts every accepted event is recorded exactly once (read back through GET /api/events). */
export async function assertExactlyOnce(t: Test, engine: EngineProcess, restKey: string, load: SdkLoad, ms = 60_000): Promise<void> {
  const all = (): Promise<number[][]> => Promise.all(load.accepted.map((_, user) => recordedOf(engine.url, restKey, user)));
  const count = (lists: number[][]) => {
    const totals = { lost: 0, doubled: 0, unknown: 0 };
    lists.forEach((seqs, user) => {
      const c = compare([...(load.accepted[user] ?? [])], seqs);
      totals.lost += c.lost;
      totals.doubled += c.doubled;
      totals.unknown += c.unknown;
    });
    return totals;
  };
  let last = { lost: load.acceptedCount, doubled: 0, unknown: 0 };
  await eventually(
    'every accepted event applied and recorded',
    async () => {
      last = count(await all());
      return last.lost === 0 ? true : undefined;
    },
    ms,
  ).catch(() => undefined);
  // Late copies would show up after the counts first match.
  await new Promise((r) => setTimeout(r, 1500));
  last = count(await eventually('the events readable', () => all().catch(() => undefined), ms));
  t.comment(`accepted ${load.acceptedCount}, refused ${load.refusedCount}, lost ${last.lost}, doubled ${last.doubled}, unknown ${last.unknown}`);
  t.same(last, { lost: 0, doubled: 0, unknown: 0 }, 'every accepted event applied exactly once');
}

/**
 * Asserts the gateway is back on Redis by itself: its last spill log says the journal was replayed,
 * and its journal files are empty.
 */
export async function assertBackOnRedis(t: Test, engine: EngineProcess, dataDir: string): Promise<void> {
  const spillLogs = () => engine.logs.filter((l) => String(l['msg']).includes('spill journal'));
  await eventually(
    'the gateway writes to Redis again',
    async () => (String(spillLogs().at(-1)?.['msg'] ?? '').startsWith('spill journal replayed') ? true : undefined),
    30_000,
  ).catch(() => undefined);
  const last = spillLogs().at(-1);
  t.match(last?.['msg'] ?? 'no spill', /^(spill journal replayed|no spill)/, 'the gateway replayed its journal and writes to Redis again');
  const dir = join(dataDir, 'spill');
  const sizes = readdirSync(dir).map((f) => statSync(join(dir, f)).size);
  t.same(sizes.filter((s) => s > 0), [], 'the spill journal is empty');
}
