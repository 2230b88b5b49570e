import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import { DEFAULT_TIMEOUT_MS, TransportError } from './provider.ts';

/** How an HTTP/2 pool connects and how much it holds (APNs and FCM). */
export interface H2PoolOptions {
  /** Extra trusted CA (PEM) for TLS; ignored for an http:// (h2c) origin. */
  ca?: string | Buffer | undefined;
  /** Longest one request may take, queue wait included, ms. Default 10 000. */
  timeoutMs?: number | undefined;
  /** Most connections open at once. Default 4. */
  maxSessions?: number | undefined;
  /** Most requests waiting for a free stream; one more is refused with `queue_full`. Default 10 000. */
  maxQueued?: number | undefined;
  /** Times one request is replayed on a new connection after GOAWAY or REFUSED_STREAM. Default 3. */
  maxReplays?: number | undefined;
  /** Streams used per connection when the peer sets no limit. Default 1000. */
  streamCap?: number | undefined;
  /** PING interval that keeps idle connections checked, ms. Default 60 000. */
  pingMs?: number | undefined;
  /** Pause before connecting again after a connection failed to open, ms. Default 1000. */
  reconnectDelayMs?: number | undefined;
}

export interface H2Response {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The connection that answered, for `replace()` (APNs 503 / IdleTimeout). */
  conn: H2Conn;
}

export interface H2Conn {
  readonly id: number;
}

interface Conn extends H2Conn {
  session: ClientHttp2Session;
  active: number;
  maxStreams: number;
  ready: boolean;
  /** No new streams: GOAWAY, error, timeout or replaced; closes once its streams are done. */
  draining: boolean;
  ping: NodeJS.Timeout;
}

interface Pending {
  headers: OutgoingHttpHeaders;
  body: Buffer;
  resolve: (answer: H2Response) => void;
  reject: (err: Error) => void;
  replays: number;
  /** When its time is up (ms): a queued request past it never goes out, however late its timer runs. */
  deadline: number;
  done: boolean;
  stream: ClientHttp2Stream | null;
  conn: Conn | null;
  timer: NodeJS.Timeout | null;
  /** The caller's signal and its listener, when the caller gave one. */
  signal: AbortSignal | null;
  onAbort: (() => void) | null;
}

/** A stream's error: its 'close' handler decides what the request comes to. */
function closeDecides(): void {}

const { NGHTTP2_NO_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_CANCEL } = http2.constants;

/**
 * A pool of long-lived HTTP/2 connections to one origin. Each connection carries at most as many
 * streams as the peer's SETTINGS_MAX_CONCURRENT_STREAMS (read on every SETTINGS frame: APNs starts
 * at 1 and raises it); requests beyond that wait in a bounded queue. A request refused by GOAWAY or
 * REFUSED_STREAM, or lost with its connection before any answer, is replayed on another connection
 * (undici client-h2.js does the same); a connection is opened only when every open one is full.
 */
export class H2Pool {
  readonly #origin: string;
  readonly #ca: string | Buffer | undefined;
  readonly #timeoutMs: number;
  readonly #maxSessions: number;
  readonly #maxQueued: number;
  readonly #maxReplays: number;
  readonly #streamCap: number;
  readonly #pingMs: number;
  readonly #reconnectDelayMs: number;
  /** No connect before this time (ms since the epoch): a failed connect is not retried in a loop. */
  #backoffUntil = 0;
  #backoffTimer: NodeJS.Timeout | null = null;
  readonly #conns = new Set<Conn>();
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closing: Promise<void> | null = null;
  /** Requests accepted and not yet finished, queued or in flight. */
  #pending = 0;
  #idle: (() => void)[] = [];
  /** Connections opened so far (tests and metrics). */
  connects = 0;

  constructor(origin: string, opts: H2PoolOptions = {}) {
    this.#origin = new URL(origin).origin;
    this.#ca = opts.ca;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxSessions = opts.maxSessions ?? 4;
    this.#maxQueued = opts.maxQueued ?? 10_000;
    this.#maxReplays = opts.maxReplays ?? 3;
    this.#streamCap = opts.streamCap ?? 1000;
    this.#pingMs = opts.pingMs ?? 60_000;
    this.#reconnectDelayMs = opts.reconnectDelayMs ?? 1000;
  }

  /**
   * Sends one request and reads the whole answer; rejects with a TransportError only. The pool
   * completes `headers` (`:method` POST unless set, `content-length`) and sends that very object:
   * the caller builds one per request.
   */
  request(headers: OutgoingHttpHeaders, body: Buffer | string, signal?: AbortSignal): Promise<H2Response> {
    if (this.#closing) return Promise.reject(new TransportError('connection_error', 'the HTTP/2 pool is closed'));
    if (this.#queue.length >= this.#maxQueued) return Promise.reject(new TransportError('queue_full', `${this.#queue.length} requests wait for ${this.#origin}`));
    if (signal?.aborted) return Promise.reject(new TransportError('canceled', 'aborted before the send'));
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    headers[':method'] ??= 'POST';
    headers['content-length'] = bytes.length;
    return new Promise<H2Response>((resolve, reject) => {
      const p: Pending = {
        headers,
        body: bytes,
        resolve,
        reject,
        replays: 0,
        deadline: Date.now() + this.#timeoutMs,
        done: false,
        stream: null,
        conn: null,
        timer: null,
        signal: signal ?? null,
        onAbort: null,
      };
      // An argument rather than a closure: a timer object a request, nothing more.
      p.timer = setTimeout(this.#onTimeout, this.#timeoutMs, p);
      if (signal !== undefined) {
        p.onAbort = () => this.#abandon(p, new TransportError('canceled', 'aborted by the caller'));
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.#pending += 1;
      this.#queue.push(p);
      this.#pump();
    });
  }

  /** Stops new streams on `conn` and opens another when needed (APNs 503, IdleTimeout). */
  replace(conn: H2Conn): void {
    for (const c of this.#conns) if (c.id === conn.id) this.#drain(c);
  }

  /** Open connections and their streams in use (tests and metrics). */
  stats(): { sessions: number; active: number; queued: number; maxStreams: number[] } {
    const live = [...this.#conns].filter((c) => !c.draining);
    return { sessions: live.length, active: live.reduce((n, c) => n + c.active, 0), queued: this.#queue.length, maxStreams: live.map((c) => c.maxStreams) };
  }

  /**
   * Refuses new requests, lets queued and in-flight ones finish (each within its timeout), then
   * closes every connection. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      while (this.#pending > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
      if (this.#backoffTimer) clearTimeout(this.#backoffTimer);
      await Promise.all([...this.#conns].map((c) => this.#closeConn(c)));
    })();
    return this.#closing;
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const conn = this.#free();
      if (!conn) break;
      const p = this.#queue.shift() as Pending;
      if (Date.now() >= p.deadline) this.#finish(p, this.#timedOut());
      else this.#start(conn, p);
    }
    if (this.#queue.length === 0) return;
    const live = [...this.#conns].filter((c) => !c.draining);
    // One connection at a time: a peer that allows one stream until SETTINGS says more must not
    // see a connect storm (docs/providers.md#connections: APNs treats reconnect storms as abuse).
    if (live.length >= this.#maxSessions || live.some((c) => !c.ready)) return;
    const wait = this.#backoffUntil - Date.now();
    if (wait <= 0) this.#connect();
    else if (!this.#backoffTimer) this.#backoffTimer = setTimeout(() => this.#afterBackoff(), wait);
  }

  #afterBackoff(): void {
    this.#backoffTimer = null;
    this.#pump();
  }

  #free(): Conn | undefined {
    let best: Conn | undefined;
    for (const c of this.#conns) {
      if (!c.ready || c.draining || c.session.closed || c.session.destroyed || c.active >= c.maxStreams) continue;
      if (!best || c.active < best.active) best = c;
    }
    return best;
  }

  #connect(): void {
    this.connects += 1;
    const session = http2.connect(this.#origin, {
      ...(this.#ca && this.#origin.startsWith('https:') ? { ca: this.#ca } : {}),
      settings: { enablePush: false },
    });
    const conn: Conn = { id: this.#nextId++, session, active: 0, maxStreams: 0, ready: false, draining: false, ping: setInterval(() => this.#ping(conn), this.#pingMs).unref() };
    this.#conns.add(conn);
    const connectTimer = setTimeout(() => session.destroy(new TransportError('timeout', `no SETTINGS from ${this.#origin}`)), this.#timeoutMs).unref();
    session.on('remoteSettings', (settings) => {
      clearTimeout(connectTimer);
      const max = settings.maxConcurrentStreams;
      conn.maxStreams = Math.min(max === undefined ? this.#streamCap : max, this.#streamCap);
      conn.ready = true;
      this.#pump();
    });
    session.on('goaway', () => this.#drain(conn));
    session.on('error', (err: Error) => {
      conn.draining = true;
      if (!conn.ready) this.#backoffUntil = Date.now() + this.#reconnectDelayMs;
      // A connection that never became ready leaves nothing to replay: the queue fails now rather
      // than waiting out its timeouts, unless another connection can take it.
      if (!conn.ready && ![...this.#conns].some((c) => c.ready && !c.draining)) {
        for (const p of this.#queue.splice(0)) this.#finish(p, new TransportError('connection_error', `connect to ${this.#origin}: ${err.message}`, { cause: err }));
      }
    });
    session.on('close', () => {
      clearTimeout(connectTimer);
      clearInterval(conn.ping);
      this.#conns.delete(conn);
      this.#pump();
    });
  }

  #start(conn: Conn, p: Pending): void {
    conn.active += 1;
    p.conn = conn;
    let stream: ClientHttp2Stream;
    try {
      stream = conn.session.request(p.headers);
    } catch {
      // The session closed between the check and the request: nothing was sent.
      conn.active -= 1;
      this.#drain(conn);
      this.#replay(p);
      return;
    }
    p.stream = stream;
    let status = 0;
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
      headers = h;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', closeDecides);
    stream.on('end', () => {
      if (status) this.#finish(p, null, { status, headers, body: chunks.length === 0 ? '' : Buffer.concat(chunks).toString('utf8'), conn });
    });
    stream.on('close', () => {
      conn.active -= 1;
      if (!p.done) {
        // No answer and no reset by the peer (NO_ERROR: the connection went away under the
        // stream, often before the session notices) or REFUSED_STREAM: the peer did not process it.
        const lost = conn.draining || conn.session.closed || conn.session.destroyed || stream.rstCode === NGHTTP2_NO_ERROR;
        if (!status && (stream.rstCode === NGHTTP2_REFUSED_STREAM || lost)) {
          if (stream.rstCode !== NGHTTP2_REFUSED_STREAM) conn.draining = true;
          this.#replay(p);
        }
        else this.#finish(p, new TransportError('connection_error', `stream reset (code ${stream.rstCode}) by ${this.#origin}`));
      }
      if (conn.draining && conn.active === 0) void this.#closeConn(conn);
      this.#pump();
    });
    stream.end(p.body);
  }

  /** Requeues a request no peer answered, at the head: it is not a new attempt. */
  #replay(p: Pending): void {
    if (p.done) return;
    p.stream = null;
    p.conn = null;
    if (p.replays >= this.#maxReplays) {
      this.#finish(p, new TransportError('connection_error', `connection to ${this.#origin} lost ${p.replays + 1} times`));
      return;
    }
    p.replays += 1;
    this.#queue.unshift(p);
  }

  readonly #onTimeout = (p: Pending): void => this.#abandon(p, this.#timedOut());

  #timedOut(): TransportError {
    return new TransportError('timeout', `no answer from ${this.#origin} in ${this.#timeoutMs} ms`);
  }

  #abandon(p: Pending, err: TransportError): void {
    if (p.done) return;
    const queued = this.#queue.indexOf(p);
    if (queued >= 0) this.#queue.splice(queued, 1);
    const { stream, conn } = p;
    this.#finish(p, err);
    if (stream && !stream.closed) stream.close(NGHTTP2_CANCEL);
    // A timeout is retried on a new connection (docs/providers.md#connections); this one takes no more streams.
    if (conn && err.kind === 'timeout') this.#drain(conn);
  }

  #finish(p: Pending, err: Error | null, answer?: H2Response): void {
    if (p.done) return;
    p.done = true;
    if (p.timer !== null) clearTimeout(p.timer);
    if (p.onAbort !== null) p.signal?.removeEventListener('abort', p.onAbort);
    this.#pending -= 1;
    if (this.#pending === 0) for (const wake of this.#idle.splice(0)) wake();
    if (err) p.reject(err);
    else p.resolve(answer as H2Response);
  }

  #drain(conn: Conn): void {
    conn.draining = true;
    if (conn.active === 0) void this.#closeConn(conn);
    this.#pump();
  }

  #ping(conn: Conn): void {
    if (!conn.ready || conn.session.closed || conn.session.destroyed) return;
    conn.session.ping((err) => {
      if (err) conn.session.destroy();
    });
  }

  #closeConn(conn: Conn): Promise<void> {
    conn.draining = true;
    clearInterval(conn.ping);
    if (conn.session.destroyed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      conn.session.once('close', () => resolve());
      if (conn.session.closed) return;
      conn.session.close();
    });
  }
}
