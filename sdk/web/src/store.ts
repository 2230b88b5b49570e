/**
 * The SDK's IndexedDB database, shared by the tabs of an origin and its service worker: the
 * settings the page gave (`config`) and the operations not yet answered (`ops`, in the order they
 * were made). Everything the worker needs to send a receipt is here, so it works with no tab open.
 */

/** A subscription type of the engine (opt-out and opt-in are per type). */
export type SubscriptionType = 'IOS_PUSH' | 'ANDROID_PUSH' | 'WEB_PUSH' | 'EMAIL' | 'SMS';

/** One operation of `POST /api/sdk/batch`, as the engine takes it. */
export interface BatchOp {
  op: 'identify' | 'tags' | 'event' | 'receipt' | 'subscribe';
  external_id: string;
  identity_hash?: string;
  [field: string]: unknown;
}

/** A synchronous consent call, kept in the queue so that it keeps its place among the writes. */
export interface ConsentOp {
  consent: 'opt-out' | 'opt-in';
  external_id: string;
  identity_hash?: string;
  subscription_type: SubscriptionType;
}

export type QueuedOp = BatchOp | ConsentOp;

/** An operation as stored: `id` orders the queue. */
export interface Stored {
  id: number;
  op: QueuedOp;
}

export interface Config {
  /** The engine's base URL, without a trailing slash. */
  url: string;
  key: string;
  user?: { external_id: string; identity_hash?: string };
  /** The project's VAPID public key, once fetched. */
  vapid?: string;
  /** The worker sends `delivered` receipts (the project's setting). */
  delivered?: boolean;
}

const DB = 'svc-web-sdk';
const OPS = 'ops';
const KV = 'kv';

let opened: Promise<IDBDatabase> | null = null;

function db(): Promise<IDBDatabase> {
  opened ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => {
      req.result.createObjectStore(OPS, { keyPath: 'id', autoIncrement: true });
      req.result.createObjectStore(KV);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => {
      opened = null;
      reject(req.error ?? new Error('IndexedDB did not open'));
    };
  });
  return opened;
}

/** Runs `body` in one transaction over `store`; resolves with its request's result once committed. */
async function tx<T>(store: string, mode: IDBTransactionMode, body: (s: IDBObjectStore) => IDBRequest<T> | void): Promise<T | undefined> {
  const t = (await db()).transaction(store, mode);
  const req = body(t.objectStore(store));
  return new Promise((resolve, reject) => {
    t.oncomplete = () => resolve(req ? req.result : undefined);
    t.onerror = t.onabort = () => reject(t.error ?? new Error('IndexedDB transaction failed'));
  });
}

export const readConfig = async (): Promise<Config | undefined> => (await tx<Config>(KV, 'readonly', (s) => s.get('config'))) ?? undefined;

/** Changes some settings; `user: null` forgets the user. */
export async function writeConfig(change: Omit<Partial<Config>, 'user'> & { user?: Config['user'] | null }): Promise<Config> {
  const { user, ...rest } = change;
  const next: Config = { ...(await readConfig()), ...rest } as Config;
  if (user === null) delete next.user;
  else if (user) next.user = user;
  await tx(KV, 'readwrite', (s) => void s.put(next, 'config'));
  return next;
}

/** Appends operations in their order; resolves once they are durable. */
export const enqueue = (ops: readonly QueuedOp[]): Promise<unknown> => tx(OPS, 'readwrite', (s) => ops.forEach((op) => s.add({ op })));

/** The oldest `n` operations. */
export async function oldest(n: number): Promise<Stored[]> {
  const all = await tx<Stored[]>(OPS, 'readonly', (s) => s.getAll(null, n));
  return all ?? [];
}

export const remove = (ids: readonly number[]): Promise<unknown> => tx(OPS, 'readwrite', (s) => ids.forEach((id) => s.delete(id)));

/** The newest id in the queue, or 0 when it is empty. */
export async function newestId(): Promise<number> {
  let newest = 0;
  await tx(OPS, 'readonly', (s) => {
    const req = s.openKeyCursor(null, 'prev');
    req.onsuccess = () => void (newest = Number(req.result?.primaryKey ?? 0));
  });
  return newest;
}

/** The oldest id in the queue, or Infinity when it is empty. */
export async function oldestId(): Promise<number> {
  const [first] = await oldest(1);
  return first?.id ?? Infinity;
}
