import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { ScriptRule, SimRequest } from './types.ts';

/** A request as a protocol sees it: headers lowercased, pseudo-headers dropped, body bytes. */
export interface Incoming {
  method: string;
  /** Path and query as sent. */
  path: string;
  headers: Record<string, string>;
  raw: Buffer;
  /** The HTTP/2 session and stream, for APNs settings and GOAWAY (absent on HTTP/1.1). */
  session?: http2.ServerHttp2Session;
  stream?: http2.ServerHttp2Stream;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON, a string or Buffer as is, undefined as an empty body. */
  body?: unknown;
}

/** One provider's behaviour; the server around it does transport, control surface, log, scripts. */
export interface Protocol {
  /** The body as logged: parsed JSON, form fields, or (web push) the decrypted plaintext. */
  parse(req: Incoming): unknown;
  /** Device tokens, phone numbers, emails or endpoint ids the request addresses, for `match.token`. */
  tokens(req: Incoming, body: unknown): string[];
  handle(req: Incoming, body: unknown): Promise<Answer> | Answer;
  /** Headers added to every answer, scripted ones too (APNs echoes apns-id). */
  decorate?(req: Incoming, answer: Answer): void;
  /** Which log the request goes to (FCM keeps its OAuth token requests apart). Default `requests`. */
  log?(req: Incoming): 'requests' | 'tokenRequests';
  /** Extra control routes under /__sim/, e.g. `POST subscriptions`: key is `METHOD name`. */
  control?: Record<string, (body: unknown) => Answer>;
  reset?(): void;
  /** Stops background work (Twilio status callbacks). */
  close?(): void;
}

export type Transport = 'h2' | 'https' | 'http';

export interface SimServerOptions {
  transport: Transport;
  host: string;
  port: number;
  tls?: { cert: string; key: string };
  /** h2 only: accept HTTP/1.1 too (FCM and Google OAuth do; APNs does not). */
  allowHTTP1?: boolean;
  /** h2 only: initial SETTINGS. */
  settings?: http2.Settings;
  protocol: Protocol;
}

export interface SimServer {
  url: string;
  transport: Transport;
  close(): Promise<void>;
}

/** Keep the last LOG_LIMIT requests; trim in chunks so a busy run does not shift on every push. */
const LOG_LIMIT = 100_000;
const LOG_SLACK = 10_000;

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

export async function startSimServer(opts: SimServerOptions): Promise<SimServer> {
  const { protocol } = opts;
  const logs: Record<'requests' | 'tokenRequests', SimRequest[]> = { requests: [], tokenRequests: [] };
  let rules: { rule: ScriptRule; left: number }[] = [];
  /** Answers held back by a rule's delay or hold: cut short when the server closes, so no timer outlives it. */
  const delays = new Set<() => void>();
  /** Answers held by a `hold` rule until `POST /__sim/release`, which also drops those rules. */
  const holds = new Set<() => void>();
  let closed = false;

  const record = (name: 'requests' | 'tokenRequests', entry: SimRequest): void => {
    const log = logs[name];
    log.push(entry);
    if (log.length > LOG_LIMIT + LOG_SLACK) log.splice(0, log.length - LOG_LIMIT);
  };

  const controlRoutes: Record<string, (body: unknown, query: URLSearchParams) => Answer> = {
    'POST script': (body) => {
      const rule = parseRule(body);
      if (typeof rule === 'string') return { status: 400, body: { error: rule } };
      rules.push({ rule, left: rule.times ?? Infinity });
      return { status: 204 };
    },
    'POST release': () => {
      rules = rules.filter((entry) => entry.rule.respond.hold !== true);
      for (const done of [...holds]) done();
      return { status: 204 };
    },
    'GET requests': (_body, query) => ({ status: 200, body: since(logs.requests, query) }),
    'GET token-requests': (_body, query) => ({ status: 200, body: since(logs.tokenRequests, query) }),
    'POST reset': () => {
      logs.requests = [];
      logs.tokenRequests = [];
      rules = [];
      protocol.reset?.();
      return { status: 204 };
    },
  };
  for (const [key, route] of Object.entries(protocol.control ?? {})) controlRoutes[key] = (body) => route(body);

  const takeRule = (req: Incoming, tokens: string[]): ScriptRule | null => {
    for (const entry of rules) {
      const { match } = entry.rule;
      if (match.path !== undefined && !req.path.includes(match.path)) continue;
      if (match.token !== undefined && !tokens.includes(match.token)) continue;
      entry.left -= 1;
      if (entry.left <= 0) rules = rules.filter((e) => e !== entry);
      return entry.rule;
    }
    return null;
  };

  const delay = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        delays.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      delays.add(done);
    });

  /** Until `POST /__sim/release`, or the server closes. */
  const hold = (): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        holds.delete(done);
        delays.delete(done);
        resolve();
      };
      holds.add(done);
      delays.add(done);
    });

  const onRequest = (req: AnyRequest, res: AnyResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => undefined);
    req.on('end', () => {
      const incoming = toIncoming(req, Buffer.concat(chunks));
      serve(incoming, res).catch((err: unknown) => {
        // A bug in a simulator: say so loudly rather than answer like a provider would.
        console.error('simulator error', err);
        send(res, { status: 500, body: { error: String(err) } });
      });
    });
  };

  const serve = async (req: Incoming, res: AnyResponse): Promise<void> => {
    const pathname = req.path.split('?')[0] ?? '';
    if (pathname.startsWith('/__sim/')) {
      const route = controlRoutes[`${req.method} ${pathname.slice('/__sim/'.length)}`];
      if (route === undefined) return send(res, { status: 404, body: { error: 'no such control route' } });
      let body: unknown = undefined;
      if (req.raw.length > 0) {
        try {
          body = JSON.parse(req.raw.toString('utf8'));
        } catch {
          return send(res, { status: 400, body: { error: 'control body must be JSON' } });
        }
      }
      return send(res, route(body, new URLSearchParams(req.path.split('?')[1] ?? '')));
    }

    const body = protocol.parse(req);
    const entry: SimRequest = { at: Date.now(), method: req.method, path: req.path, headers: req.headers, body, status: 0 };
    record(protocol.log?.(req) ?? 'requests', entry);
    const rule = takeRule(req, protocol.tokens(req, body));
    if (rule?.respond.delayMs) {
      await delay(rule.respond.delayMs);
      if (closed) return;
    }
    if (rule?.respond.hold) {
      await hold();
      if (closed) return;
    }
    if (rule?.respond.goaway && req.session && req.stream) {
      goaway(req.session, req.stream);
      return;
    }
    const answer: Answer = rule
      ? { status: rule.respond.status, headers: { ...rule.respond.headers }, body: rule.respond.body }
      : await protocol.handle(req, body);
    protocol.decorate?.(req, answer);
    entry.status = answer.status;
    send(res, answer);
  };

  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  let server: http.Server | https.Server | http2.Http2SecureServer;
  if (opts.transport === 'h2') {
    if (!opts.tls) throw new Error('h2 simulator needs tls');
    const s = http2.createSecureServer({
      ...opts.tls,
      allowHTTP1: opts.allowHTTP1 ?? false,
      ...(opts.settings ? { settings: opts.settings } : {}),
    });
    s.on('request', onRequest);
    s.on('session', (session) => {
      sessions.add(session);
      session.on('stream', (stream) => lastStreamIds.set(session, Math.max(lastStreamIds.get(session) ?? 0, stream.id ?? 0)));
      session.on('close', () => sessions.delete(session));
      session.on('error', () => undefined);
    });
    server = s;
  } else if (opts.transport === 'https') {
    if (!opts.tls) throw new Error('https simulator needs tls');
    server = https.createServer(opts.tls, onRequest);
  } else {
    server = http.createServer(onRequest);
  }
  // HTTP/1.1 sockets (and h2 ones before the session starts): destroyed on close.
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const url = `${opts.transport === 'http' ? 'http' : 'https'}://${host}:${port}`;

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      closed = true;
      for (const done of delays) done();
      protocol.close?.();
      server.close(() => resolve());
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    });
    return closing;
  };
  return { url, transport: opts.transport, close };
}

/** Highest stream id each HTTP/2 session has received, for GOAWAY's last-stream-id. */
const lastStreamIds = new WeakMap<http2.ServerHttp2Session, number>();

/**
 * GOAWAY the way APNs does on shutdown: NO_ERROR with a JSON reason as debug data. The
 * last-stream-id covers every stream received so far, which are still answered; this one is reset
 * with REFUSED_STREAM (RFC 9113 section 8.7: not processed, safe to replay elsewhere), and streams
 * opened after the GOAWAY are never processed.
 */
function goaway(session: http2.ServerHttp2Session, stream: http2.ServerHttp2Stream): void {
  const id = stream.id ?? 1;
  const highest = lastStreamIds.get(session) ?? id;
  const lastStreamId = highest > id ? highest : Math.max(0, id - 2);
  session.goaway(http2.constants.NGHTTP2_NO_ERROR, lastStreamId, Buffer.from(JSON.stringify({ reason: 'Shutdown' })));
  stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
  // Streams up to lastStreamId finish; then the connection goes.
  session.close();
}

function toIncoming(req: AnyRequest, raw: Buffer): Incoming {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  const incoming: Incoming = { method: req.method ?? 'GET', path: req.url ?? '/', headers, raw };
  if ('stream' in req && req.stream) {
    incoming.stream = req.stream;
    incoming.session = req.stream.session as http2.ServerHttp2Session;
  }
  return incoming;
}

function send(res: AnyResponse, answer: Answer): void {
  if (res.headersSent || res.writableEnded || (res as { destroyed?: boolean }).destroyed) return;
  if ('stream' in res && (res.stream.closed || res.stream.destroyed)) return;
  const headers: Record<string, string> = { ...answer.headers };
  let payload: Buffer | undefined;
  if (answer.body === undefined || answer.body === null) payload = undefined;
  else if (Buffer.isBuffer(answer.body)) payload = answer.body;
  else if (typeof answer.body === 'string') payload = Buffer.from(answer.body);
  else {
    payload = Buffer.from(JSON.stringify(answer.body));
    headers['content-type'] ??= 'application/json; charset=utf-8';
  }
  if (payload !== undefined) headers['content-length'] = String(payload.length);
  try {
    (res as http.ServerResponse).writeHead(answer.status, headers);
    (res as http.ServerResponse).end(payload);
  } catch {
    // The client went away (timeout, reset): nothing to answer.
  }
}

function since(log: SimRequest[], query: URLSearchParams): SimRequest[] {
  const from = Number(query.get('since') ?? 0);
  return Number.isInteger(from) && from > 0 ? log.slice(from) : log;
}

function parseRule(body: unknown): ScriptRule | string {
  if (!isObject(body)) return 'body must be {match, respond, times?}';
  const { match, respond, times } = body;
  if (!isObject(match)) return 'match must be an object';
  if (!isObject(respond)) return 'respond must be an object';
  if (match.path !== undefined && typeof match.path !== 'string') return 'match.path must be a string';
  if (match.token !== undefined && typeof match.token !== 'string') return 'match.token must be a string';
  const status = respond.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) return 'respond.status must be an HTTP status';
  if (respond.headers !== undefined && (!isObject(respond.headers) || !Object.values(respond.headers).every((v) => typeof v === 'string')))
    return 'respond.headers must map names to strings';
  if (respond.delayMs !== undefined && (typeof respond.delayMs !== 'number' || respond.delayMs < 0)) return 'respond.delayMs must be >= 0';
  if (respond.hold !== undefined && typeof respond.hold !== 'boolean') return 'respond.hold must be a boolean';
  if (times !== undefined && (typeof times !== 'number' || !Number.isInteger(times) || times < 1)) return 'times must be a positive integer';
  return body as unknown as ScriptRule;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** 16 random bytes as a UUID, upper-case as APNs writes them. */
export const newId = (): string => randomUUID().toUpperCase();

export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return raw.toString('utf8');
  }
}
