import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Topology } from '../../engine/infra/redis/topology.ts';

/**
 * Load and bookkeeping of the overload tests (test/e2e/redis-full.test.ts,
 * test/e2e/clickhouse-outage-full.test.ts, test/spill/admission.test.ts): SDK batches of events
 * with idempotency keys for a fixed set of users, what each answer was, what reached Redis and
 * ClickHouse, and live state that fills a Redis past its watermark.
 */

export const USERS = 20;
export const BATCH = 500;

/** What the senders saw: accepted event numbers, refusals by status and code. */
export class Ledger {
  readonly accepted = new Set<number>();
  /** `503 overloaded` answers, each with its Retry-After and message. */
  readonly overloaded: { retryAfter: string | null; message: string }[] = [];
  /** Any other answer than 202 and `503 overloaded`: `status code`. */
  readonly other: string[] = [];
  private next = 0;

  /** Sends one batch of BATCH events (numbers next..next+BATCH-1, users round robin) and books the answer. */
  async sendBatch(url: string, key: string): Promise<number> {
    const first = this.next;
    this.next += BATCH;
    const operations = Array.from({ length: BATCH }, (_, i) => {
      const seq = first + i;
      return { op: 'event', external_id: userOf(seq), name: 'tick', properties: { seq }, idempotency_key: `k${seq}` };
    });
    const res = await fetch(`${url}/api/sdk/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ operations }),
      signal: AbortSignal.timeout(15_000),
    }).catch(() => null);
    if (res === null) {
      this.other.push('no answer');
      return 0;
    }
    const body = (await res.json().catch(() => null)) as { errors?: { code: string; message: string }[] } | null;
    const code = body?.errors?.[0]?.code;
    if (res.status === 202) for (let i = 0; i < BATCH; i++) this.accepted.add(first + i);
    else if (res.status === 503 && code === 'overloaded') this.overloaded.push({ retryAfter: res.headers.get('retry-after'), message: body?.errors?.[0]?.message ?? '' });
    else this.other.push(`${res.status} ${code ?? ''}`);
    return res.status;
  }

  /** The accepted event numbers of user `u`, in order. */
  acceptedOf(user: number): number[] {
    return [...this.accepted].filter((s) => s % USERS === user).sort((a, b) => a - b);
  }
}

export function userOf(seq: number): string {
  return `u${seq % USERS}`;
}

/** The `seq` of every event of user `u` recorded in ClickHouse, read through GET /api/events, sorted. */
export async function recordedOf(url: string, restKey: string, user: number): Promise<number[]> {
  const seqs: number[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `external_id=u${user}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetch(`${url}/api/events?${query}`, { headers: { authorization: `Bearer ${restKey}` } });
    if (res.status !== 200) throw new Error(`GET /api/events answered ${res.status}`);
    const page = (await res.json()) as { events: { properties: { seq: number } }[]; next_cursor: string | null };
    seqs.push(...page.events.map((e) => e.properties.seq));
    cursor = page.next_cursor;
  } while (cursor !== null);
  return seqs.sort((a, b) => a - b);
}

/** Events applied: each applied event with an idempotency key counts in its day's idempotency table (`idw:{pN}:<day>` field n). */
export async function appliedCount(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  try {
    let count = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}idw:*`, 'COUNT', 5000);
      for (const key of keys) if (/:\{p\d+\}:\d+$/.test(key)) count += Number(await redis.hget(key, 'n'));
      cursor = next;
    } while (cursor !== '0');
    return count;
  } finally {
    redis.disconnect();
  }
}

/** Accepted against recorded: how many of user `u`'s accepted events are missing, and how many recorded twice. */
export function compare(accepted: number[], recorded: number[]): { lost: number; doubled: number; unknown: number } {
  const want = new Set(accepted);
  const seen = new Set<number>();
  let doubled = 0;
  let unknown = 0;
  for (const s of recorded) {
    if (seen.has(s)) doubled++;
    else if (!want.has(s)) unknown++;
    seen.add(s);
  }
  return { lost: accepted.filter((s) => !seen.has(s)).length, doubled, unknown };
}

/** The value of a Prometheus sample line (`name{labels} value`) in a /metrics text, or undefined. */
export function metric(text: string, sample: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/**
 * A consumer group of the test's own on every ingest stream, one that never reads: the apply trims
 * nothing past it, so the order each partition was applied in stays readable (ingestOrder).
 */
export function keepIngestLog(url: string, topology: Topology): Promise<void> {
  return withClient(url, async (client) => {
    for (let p = 0; p < topology.partitions; p++) await client.xgroup('CREATE', topology.ingest(p), 'test-observer', '0', 'MKSTREAM');
  });
}

/**
 * Each user's event `seq` numbers in the order their partition's ingest log holds them (kept by
 * keepIngestLog); a copy, which the apply skips, counts at its first place only.
 */
export function ingestOrder(url: string, topology: Topology): Promise<Map<string, number[]>> {
  return withClient(url, async (client) => {
    const order = new Map<string, number[]>();
    for (let p = 0; p < topology.partitions; p++) {
      for (const [, fields] of await client.xrange(topology.ingest(p), '-', '+')) {
        const e = JSON.parse(fields[1] ?? '{}') as { op?: string; external_id?: string; properties?: { seq?: number } };
        if (e.op !== 'event' || e.external_id === undefined || e.properties?.seq === undefined) continue;
        const seqs = order.get(e.external_id) ?? [];
        if (!seqs.includes(e.properties.seq)) seqs.push(e.properties.seq);
        order.set(e.external_id, seqs);
      }
    }
    return order;
  });
}

/** Redis's used_memory and maxmemory at `url`. */
export function redisMemory(url: string): Promise<{ used: number; maxmemory: number }> {
  return withClient(url, memoryOf);
}

/**
 * Live state that waiting does not free: plain keys under `prefix` (64 KiB values, no TTL), written
 * until Redis's used_memory reaches `target` bytes. Returns their names, for freeLiveState.
 */
export function fillWithLiveState(url: string, prefix: string, target: number): Promise<string[]> {
  const value = 'x'.repeat(64 * 1024);
  return withClient(url, async (client) => {
    const keys: string[] = [];
    while ((await memoryOf(client)).used < target) {
      const key = `${prefix}live:${randomBytes(6).toString('hex')}`;
      await client.set(key, value);
      keys.push(key);
    }
    return keys;
  });
}

/**
 * Deletes what fillWithLiveState wrote (DEL runs at maxmemory too): all of it, or with `downTo` one
 * key at a time until used_memory is at most that. Deleted names leave `keys`.
 */
export function freeLiveState(url: string, keys: string[], downTo = 0): Promise<void> {
  return withClient(url, async (client) => {
    if (downTo === 0) {
      if (keys.length > 0) await client.del(...keys.splice(0));
      return;
    }
    while (keys.length > 0 && (await memoryOf(client)).used > downTo) await client.del(keys.pop() ?? '');
  });
}

async function withClient<T>(url: string, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { maxRetriesPerRequest: 2 });
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

async function memoryOf(client: Redis): Promise<{ used: number; maxmemory: number }> {
  const info = await client.info('memory');
  const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { used: field('used_memory'), maxmemory: field('maxmemory') };
}
