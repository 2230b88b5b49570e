/** Small HTTP helpers for tests that talk to a gateway. */
export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function call(url: string, method: string, key: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (e.g. /metrics): keep the text.
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Polls `check` until it returns a value other than undefined, or fails after `ms`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, ms = 15000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
