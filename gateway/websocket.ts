import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type WebSocket, type us_socket_context_t } from 'uWebSockets.js';
import { ErrorCodes, type ErrorCode, type ErrorItem } from '../schemas/errors.ts';
import { bearerKey, identityOk, type Caller } from './auth.ts';
import type { GatewayDeps } from './context.ts';
import { opEntry } from './entries.ts';
import { Exchange, RouteMetric, utf8 } from './http.ts';

export const wsRoute = { path: '/api/sdk/ws', allow: 'GET' } as const;

/** Largest operation frame (the SDK body limit); larger frames get payload_too_large. */
const FRAME_LIMIT = 64 * 1024;
/** uWS closes the connection past this; kept above FRAME_LIMIT so an oversized frame gets an answer. */
const MAX_PAYLOAD = 256 * 1024;
/** Answers a connection may have waiting for earlier ones before it is told to slow down. */
const MAX_QUEUED = 4096;

interface Connection {
  caller: Caller;
  closed: boolean;
  /** Answers in arrival order; a slot's text is null while its append is still running. */
  queue: Slot[];
}

interface Slot {
  text: string | null;
}

/**
 * The WebSocket SDK channel (API.md section 3.2). The key comes in `Authorization` or as the
 * subprotocol `bearer.<key>` (browsers cannot set headers) and is checked before the upgrade.
 * Each text frame is one batch operation plus `seq`; answers go out in the order frames arrived.
 */
export class SdkSocketChannel {
  private readonly sockets = new Set<WebSocket<Connection>>();
  private readonly metric: RouteMetric;

  constructor(private readonly deps: GatewayDeps) {
    this.metric = new RouteMetric(deps.metrics.requests, wsRoute.path);
  }

  register(app: TemplatedApp): void {
    app.ws<Connection>(wsRoute.path, {
      maxPayloadLength: MAX_PAYLOAD,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      compression: uWS.DISABLED,
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => void this.sockets.add(ws),
      message: (ws, message, isBinary) => this.message(ws, message, isBinary),
      close: (ws) => {
        ws.getUserData().closed = true;
        this.sockets.delete(ws);
      },
    });
  }

  /** Closes every connection (graceful shutdown): 1001 going away. */
  closeAll(): void {
    for (const ws of [...this.sockets]) ws.end(1001, 'server shutting down');
  }

  private upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
    const ex = new Exchange(res, this.metric, this.deps.tracker);
    if (this.deps.tracker.draining) return ex.unavailable();
    const wsKey = req.getHeader('sec-websocket-key');
    const extensions = req.getHeader('sec-websocket-extensions');
    const offered = req
      .getHeader('sec-websocket-protocol')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const bearer = offered.find((p) => p.startsWith('bearer.'));
    const key = bearerKey(req.getHeader('authorization')) ?? (bearer ? bearer.slice('bearer.'.length) || null : null);
    if (key === null) return ex.fail('missing_key');
    // Echo the protocol that carried the key; a client that offered others gets its first back.
    const protocol = bearer ?? offered[0] ?? '';
    const decide = (caller: Caller | null): void => {
      if (caller === null) return ex.fail('invalid_key');
      const data: Connection = { caller, closed: false, queue: [] };
      ex.upgrade((r) => r.upgrade(data, wsKey, protocol, extensions, context));
    };
    const cached = this.deps.callers.peek(key);
    if (cached !== undefined) return decide(cached);
    this.deps.callers.load(key).then(decide, (err: unknown) => {
      this.deps.tracker.redisFailed('key lookup', err);
      ex.unavailable();
    });
  }

  private message(ws: WebSocket<Connection>, message: ArrayBuffer, isBinary: boolean): void {
    const conn = ws.getUserData();
    if (conn.queue.length >= MAX_QUEUED) return ws.end(1013, 'too many operations in flight');
    if (isBinary) return this.answer(ws, conn, errorFrame(null, 'invalid_json', 'Frames must be text: one JSON operation each.'));
    if (message.byteLength > FRAME_LIMIT) return this.answer(ws, conn, errorFrame(null, 'payload_too_large'));
    let value: unknown;
    try {
      value = JSON.parse(utf8.decode(new Uint8Array(message)));
    } catch {
      return this.answer(ws, conn, errorFrame(null, 'invalid_json'));
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return this.answer(ws, conn, errorFrame(null, 'validation_failed', 'body: must be object', ''));
    }
    const { seq, ...op } = value as Record<string, unknown>;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) {
      return this.answer(ws, conn, errorFrame(null, 'validation_failed', `seq: ${seq === undefined ? 'is required' : 'must be integer'}`, '/seq'));
    }
    const checked = this.deps.validators.op(op);
    if (!checked.ok) return this.answer(ws, conn, JSON.stringify({ seq, errors: checked.errors }));
    if (!identityOk(conn.caller, checked.value.external_id, checked.value.identity_hash)) {
      return this.answer(ws, conn, errorFrame(seq, 'identity_verification_failed', undefined, '/identity_hash'));
    }
    const slot: Slot = { text: null };
    conn.queue.push(slot);
    this.deps.tracker.start();
    this.deps.ingest.write([opEntry(conn.caller.project, checked.value, Date.now())]).then(
      () => {
        this.deps.metrics.acceptedWrites.inc();
        this.settle(ws, conn, slot, `{"seq":${seq},"accepted":true}`);
      },
      (err: unknown) => {
        this.deps.tracker.redisFailed('ingest append', err);
        this.settle(ws, conn, slot, errorFrame(seq, 'unavailable'));
      },
    );
  }

  /** An answer that needs no append: queued behind earlier answers still waiting. */
  private answer(ws: WebSocket<Connection>, conn: Connection, text: string): void {
    conn.queue.push({ text });
    this.flush(ws, conn);
  }

  private settle(ws: WebSocket<Connection>, conn: Connection, slot: Slot, text: string): void {
    this.deps.tracker.done();
    slot.text = text;
    this.flush(ws, conn);
  }

  /** Sends the answers at the head of the queue that are ready, in one corked write. */
  private flush(ws: WebSocket<Connection>, conn: Connection): void {
    const queue = conn.queue;
    if (conn.closed || queue[0]?.text == null) return;
    let ready = 0;
    while (ready < queue.length && queue[ready]?.text != null) ready++;
    const out = queue.splice(0, ready);
    ws.cork(() => {
      for (const slot of out) if (slot.text !== null) ws.send(slot.text, false);
    });
  }
}

function errorFrame(seq: number | null, code: ErrorCode, message?: string, path?: string): string {
  const item: ErrorItem = { code, message: message ?? ErrorCodes[code].message };
  if (path !== undefined) item.path = path;
  return JSON.stringify({ seq, errors: [item] });
}
