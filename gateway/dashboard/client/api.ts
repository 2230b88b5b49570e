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

/** An answer other than 2xx, with the first error of the body (API.md section 2). */
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

export async function api<T>(method: 'GET' | 'DELETE', path: string, params: Params = {}, key = storedKey()): Promise<T> {
  const headers: Record<string, string> = {};
  if (key !== null) headers['Authorization'] = `Bearer ${key}`;
  let res: Response;
  try {
    res = await fetch(path + queryString(params), { method, headers });
  } catch {
    throw new ApiError(0, 'network', 'The gateway did not answer.');
  }
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
