import { Redis } from 'ioredis';

/**
 * Load and bookkeeping of the overload tests (test/e2e/redis-full.test.ts,
 * test/e2e/clickhouse-outage-full.test.ts): SDK batches of events with idempotency keys for a
 * fixed set of users, what each answer was, and what reached Redis and ClickHouse.
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
