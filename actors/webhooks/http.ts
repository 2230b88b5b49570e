import { Agent, request, type Dispatcher } from 'undici';
import type { OutboundPolicy } from '../../engine/infra/outbound/guard.ts';
import { guardedLookup } from '../../engine/infra/outbound/guard.ts';
import { retryAfterMs } from '../../engine/infra/outbound/retry-after.ts';

/** What one POST to a receiver came to. */
export type PostResult =
  | { ok: true; status: number; latencyMs: number }
  | {
      ok: false;
      /** The HTTP status; null when no answer came. */
      status: number | null;
      latencyMs: number;
      error: string;
      /** What the receiver's Retry-After asked for, ms from now; undefined when it sent none. */
      retryAfterMs?: number;
    };

/**
 * Pooled HTTP/1.1 to webhook receivers (undici: a keep-alive pool per origin). Names are resolved
 * through the outbound guard when each connection is made, so a receiver whose name moves to a
 * private address is refused at send as at registration (docs/api.md#outbound-urls). A redirect
 * is an answer like any other 3xx, never followed (no redirect interceptor): a receiver cannot
 * send the engine to an address the guard was never asked about.
 */
export class WebhookHttp {
  readonly #agent: Dispatcher;
  #closing: Promise<void> | undefined;

  constructor(
    policy: OutboundPolicy,
    private readonly timeoutMs: number,
    connections: number,
  ) {
    const lookup = guardedLookup(policy);
    this.#agent = new Agent({ connections, keepAliveTimeout: 30_000, connect: lookup ? { lookup } : {} });
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<PostResult> {
    const started = performance.now();
    const latency = (): number => Math.round(performance.now() - started);
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(url, { method: 'POST', dispatcher: this.#agent, headers, body, signal });
      await res.body.dump({ limit: 64 * 1024, signal });
      if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true, status: res.statusCode, latencyMs: latency() };
      const wait = retryAfterMs(res.headers['retry-after']);
      return { ok: false, status: res.statusCode, latencyMs: latency(), error: `HTTP ${res.statusCode}`, ...(wait === null ? {} : { retryAfterMs: wait }) };
    } catch (err) {
      const error = signal.aborted ? `timeout: no answer in ${this.timeoutMs} ms` : errorText(err);
      return { ok: false, status: null, latencyMs: latency(), error };
    }
  }

  close(): Promise<void> {
    this.#closing ??= this.#agent.close();
    return this.#closing;
  }
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause : undefined;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (err as NodeJS.ErrnoException).code;
  const message = cause?.message ?? err.message;
  return code === undefined ? message : `${code}: ${message}`;
}
