/**
 * Calls to the gateway with the REST key of this browser session. The key lives in
 * sessionStorage only: it goes in the Authorization header (or the WebSocket subprotocol), never in
 * a URL, so shared links and server logs never carry it.
 */

const KEY = 'svc.dashboard.key';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key: string | null): void {
  if (key === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, key);
}

const REFUSED = 'svc-dashboard-key-refused';

/** Forgets the stored key the gateway refused (revoked, say), and tells onKeyRefused's listeners. */
export function refuseKey(): void {
  storeKey(null);
  dispatchEvent(new Event(REFUSED));
}

/** Calls `listener` whenever the stored key is refused; returns what stops it. */
export function onKeyRefused(listener: () => void): () => void {
  addEventListener(REFUSED, listener);
  return () => removeEventListener(REFUSED, listener);
}

/** An answer other than 2xx, with the first error of the body (docs/api.md#errors). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Params = Record<string, string | number | undefined>;

/** A query string of the defined values, in a stable order. */
export function queryString(params: Params): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') q.set(name, String(value));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

export interface CallOptions {
  /** A key to try instead of the stored one (the key prompt's); its refusal forgets nothing. */
  key?: string;
  signal?: AbortSignal;
}

/**
 * One call with the stored key (or `options.key`). A 401 to the stored key means it was revoked:
 * it is forgotten and the page asks for one again.
 */
export async function api<T>(method: 'GET' | 'DELETE', path: string, params: Params = {}, options: CallOptions = {}): Promise<T> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = {};
  if (key !== null) headers['Authorization'] = `Bearer ${key}`;
  let res: Response;
  try {
    res = await fetch(path + queryString(params), { method, headers, signal: options.signal ?? null });
  } catch {
    throw new ApiError(0, 'network', 'The gateway did not answer.');
  }
  if (res.status === 401 && options.key === undefined && key !== null) refuseKey();
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    body = null;
  }
  if (!res.ok) {
    const first = (body as { errors?: { code: string; message: string }[] } | null)?.errors?.[0];
    throw new ApiError(res.status, first?.code ?? 'http', first?.message ?? `HTTP ${res.status}`);
  }
  return body as T;
}

/** What to tell an operator about a failed call. */
export function explain(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 503) return `A dependency is down or slow: ${err.message}`;
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}
