import { SvcError } from './errors.ts';
import { oldest, readConfig, remove, type BatchOp, type Config, type ConsentOp, type Stored } from './store.ts';

/** One sender at a time over every tab and the worker of an origin (Web Locks). */
const LOCK = 'svc-web-sdk-sender';
const MAX_BATCH = 100;
const MAX_BACKOFF_MS = 60_000;

/** What the engine says of a refused call: its error items. */
interface ErrorBody {
  errors?: { code?: string; message?: string; path?: string }[];
}

/** How long to wait before the next try, and whether a kick may cut it short (it may not when the engine named the time). */
interface Pause {
  ms: number;
  firm: boolean;
}

const sleepFor = (ms: number, onWake: (wake: () => void) => void): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    onWake(() => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * Sends the queue (./store.ts) in order, in batches of at most 100 operations, until it is empty:
 * an answered batch leaves the queue; a 4xx other than 408 and 429 drops the operations it names
 * (all of the batch when it names none) and reports each; 408, 429, 5xx and lost connections are
 * tried again after Retry-After when the engine gives it, else after an exponential backoff with
 * jitter (1 s doubling to 60 s), which only `wake` cuts short.
 */
export class Sender {
  #running: Promise<void> | null = null;
  #again = false;
  #wake: (() => void) | null = null;
  #failures = 0;
  #batch = MAX_BATCH;

  constructor(private readonly report: (error: SvcError) => void) {}

  /** Cuts a backoff after a lost connection short (the browser is online again); a wait the engine named is kept. */
  wake(): void {
    this.#wake?.();
  }

  /** Starts a run unless one is under way (which will see what was queued); resolves when the queue is empty. */
  kick(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const run = async (): Promise<void> => {
      do {
        this.#again = false;
        await this.#locked(() => this.#drain());
      } while (this.#again);
    };
    this.#running = run().finally(() => (this.#running = null));
    return this.#running;
  }

  #locked(work: () => Promise<void>): Promise<void> {
    const locks = (globalThis.navigator as { locks?: LockManager } | undefined)?.locks;
    return locks ? locks.request(LOCK, work).then(() => undefined) : work();
  }

  async #drain(): Promise<void> {
    for (;;) {
      const config = await readConfig();
      const items = config ? await oldest(this.#batch) : [];
      if (!config || items.length === 0) return;
      const head = items[0] as Stored;
      const pause = 'consent' in head.op ? await this.#consent(config, head as Stored & { op: ConsentOp }) : await this.#batchOf(config, leadingBatch(items));
      if (pause) await sleepFor(pause.ms, (wake) => (this.#wake = pause.firm ? null : wake));
      this.#wake = null;
    }
  }

  async #batchOf(config: Config, items: (Stored & { op: BatchOp })[]): Promise<Pause | null> {
    const answer = await call(config, '/api/sdk/batch', { operations: items.map((i) => i.op) });
    if (answer instanceof Response && answer.status === 413 && items.length > 1) {
      this.#batch = Math.max(1, Math.floor(items.length / 2));
      return null;
    }
    return this.#settle(answer, items, (path) => Number(/^\/operations\/(\d+)/.exec(path ?? '')?.[1] ?? NaN));
  }

  async #consent(config: Config, item: Stored & { op: ConsentOp }): Promise<Pause | null> {
    const { consent, identity_hash, ...body } = item.op;
    return this.#settle(await call(config, `/api/sdk/${consent}`, body, identity_hash), [item], () => 0);
  }

  /** What an answer means for `items`: done, dropped with a report, or a pause before trying them again. */
  async #settle(answer: Response | Error, items: Stored[], indexOf: (path: string | undefined) => number): Promise<Pause | null> {
    if (answer instanceof Error || answer.status === 408 || answer.status === 429 || answer.status >= 500) {
      this.#failures += 1;
      const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.#failures - 1)) * (0.5 + Math.random() / 2);
      const named = answer instanceof Response ? Number(answer.headers.get('Retry-After')) : NaN;
      return Number.isFinite(named) && named > 0 ? { ms: named * 1000 + Math.random() * 250, firm: true } : { ms: backoff, firm: false };
    }
    this.#failures = 0;
    this.#batch = MAX_BATCH;
    if (answer.status >= 400) {
      const body = (await answer.json().catch(() => ({}))) as ErrorBody;
      const errors = body.errors ?? [];
      const named = new Map(errors.map((e) => [indexOf(e.path), e] as const));
      const dropAll = errors.length === 0 || [...named.keys()].some((i) => !(i >= 0 && i < items.length));
      const dropped = dropAll ? items : items.filter((_, i) => named.has(i));
      for (const [i, item] of items.entries()) {
        if (!dropped.includes(item)) continue;
        const e = named.get(i) ?? errors[0];
        this.report(new SvcError(e?.code ?? 'refused', e?.message ?? `The engine answered ${answer.status}`, answer.status, item.op));
      }
      await remove(dropped.map((i) => i.id));
      return null;
    }
    await remove(items.map((i) => i.id));
    return null;
  }
}

/** The batch operations at the head of the queue, up to its first consent call. */
function leadingBatch(items: Stored[]): (Stored & { op: BatchOp })[] {
  const end = items.findIndex((i) => 'consent' in i.op);
  return items.slice(0, end === -1 ? items.length : end) as (Stored & { op: BatchOp })[];
}

/** One call to the engine; an Error when no answer came (offline, refused connection). */
async function call(config: Config, path: string, body: unknown, identityHash?: string): Promise<Response | Error> {
  const headers: Record<string, string> = { Authorization: `Bearer ${config.key}`, 'Content-Type': 'application/json' };
  if (identityHash) headers['X-Identity-Hash'] = identityHash;
  try {
    return await fetch(config.url + path, { method: 'POST', headers, body: JSON.stringify(body) });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}
