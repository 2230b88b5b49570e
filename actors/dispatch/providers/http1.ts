import { Agent, request, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import { deadline, DEFAULT_TIMEOUT_MS, TransportError } from './provider.ts';

export interface Http1Options {
  ca?: string | Buffer | undefined;
  timeoutMs?: number | undefined;
  /** Most keep-alive connections per origin. Default 32. */
  connections?: number | undefined;
  /** Resolves names when a connection is made (the outbound guard's, for caller-chosen URLs). */
  lookup?: LookupFunction | undefined;
}

export interface Http1Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Pooled HTTP/1.1 (undici Agent: one keep-alive pool per origin) for Web Push, Twilio and
 * SendGrid. A request that times out or loses its socket rejects with a TransportError; undici
 * drops that socket, so the retry goes out on a new connection. A redirect is returned as
 * the answer, never followed: a Web Push endpoint is caller-chosen (docs/api.md#outbound-urls).
 */
export class Http1 {
  readonly #agent: Dispatcher;
  readonly #timeoutMs: number;
  #closing: Promise<void> | null = null;

  constructor(opts: Http1Options = {}) {
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#agent = new Agent({
      connections: opts.connections ?? 32,
      keepAliveTimeout: 60_000,
      connect: { ...(opts.ca ? { ca: opts.ca } : {}), ...(opts.lookup ? { lookup: opts.lookup } : {}) },
    });
  }

  async post(url: string, headers: Record<string, string>, body: string | Buffer, signal?: AbortSignal): Promise<Http1Answer> {
    if (this.#closing) throw new TransportError('connection_error', 'the HTTP/1.1 pool is closed');
    const limit = deadline(this.#timeoutMs, signal);
    try {
      const res = await request(url, { method: 'POST', dispatcher: this.#agent, headers, body, signal: limit });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, body: text };
    } catch (err) {
      if (signal?.aborted) throw new TransportError('canceled', 'aborted by the caller', { cause: err });
      if (limit.aborted) throw new TransportError('timeout', `no answer from ${new URL(url).origin} in ${this.#timeoutMs} ms`, { cause: err });
      throw err;
    }
  }

  /** Lets in-flight requests finish, then closes every connection. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#agent.close();
    return this.#closing;
  }
}
