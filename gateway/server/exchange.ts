import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Counter } from 'prom-client';
import { ErrorCodes, type ErrorCode, type ErrorItem } from '../../schemas/errors.ts';
import { bearerKey, type Caller } from './auth.ts';
import { parseJson } from './json.ts';
import type { GatewayDeps, Tracker } from './deps.ts';
import type { Outcome } from './failure.ts';
import type { RawRequest } from './request-check.ts';
import type { Auth } from './route.ts';
import { throttle } from './rate-limit.ts';

const statusLines: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

/** Error bodies of API.md section 2 with the registry's message, built once. */
const defaultBodies = Object.fromEntries(
  Object.entries(ErrorCodes).map(([code, e]) => [code, JSON.stringify({ errors: [{ code, message: e.message }] })]),
) as Record<ErrorCode, string>;

export const JSON_TYPE = 'application/json';
type Header = readonly [string, string];

/** Checks an answer against its route's declared answers: null when it matches, else the answer to send instead. */
export type AnswerCheck = (status: number, contentType: string, body: string | Uint8Array) => Outcome | null;

/** The answers of one route pattern: counted per status and, when `check` is set, checked against their schemas. */
export class RouteAnswers {
  private readonly children = new Map<number, { inc(): void }>();

  constructor(
    private readonly counter: Counter<'route' | 'status'>,
    readonly route: string,
    readonly check: AnswerCheck | null = null,
  ) {}

  inc(status: number): void {
    let child = this.children.get(status);
    if (child === undefined) {
      child = this.counter.labels(this.route, String(status));
      this.children.set(status, child);
    }
    child.inc();
  }
}

/**
 * One HTTP request/response. Every write happens inside res.cork, and never after the client
 * aborted or after the answer was sent (uWS forbids both).
 */
export class Exchange {
  private finished = false;

  constructor(
    private readonly res: HttpResponse,
    private readonly metric: RouteAnswers,
    private readonly tracker: Tracker,
  ) {
    tracker.start();
    res.onAborted(() => this.finish());
  }

  /** False once answered or aborted: nothing more may be written. */
  get open(): boolean {
    return !this.finished;
  }

  send(status: number, body: string | Uint8Array, contentType = JSON_TYPE, headers: readonly Header[] = []): void {
    if (this.finished) return;
    const wrong = this.metric.check?.(status, contentType, body);
    if (wrong) return this.write(ErrorCodes.internal.status, JSON.stringify({ errors: wrong.items }), JSON_TYPE, []);
    this.write(status, body, contentType, headers);
  }

  private write(status: number, body: string | Uint8Array, contentType: string, headers: readonly Header[]): void {
    this.finish();
    this.metric.inc(status);
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLines[status] ?? String(status));
      for (const [name, value] of headers) res.writeHeader(name, value);
      // Browsers may call the API from any origin: keys travel in Authorization, never in cookies.
      res.writeHeader('Access-Control-Allow-Origin', '*');
      if (status !== 204) res.writeHeader('Content-Type', contentType);
      res.end(body);
    });
  }

  /** Answers with a WebSocket upgrade (101); `upgrade` calls res.upgrade. */
  upgrade(upgrade: (res: HttpResponse) => void): void {
    if (this.finished) return;
    this.finish();
    this.metric.inc(101);
    const res = this.res;
    res.cork(() => upgrade(res));
  }

  /** An error answer; `items` replaces the registry's single default item. */
  fail(code: ErrorCode, items?: ErrorItem[], headers: readonly Header[] = []): void {
    const body = items === undefined ? defaultBodies[code] : JSON.stringify({ errors: items });
    this.send(ErrorCodes[code].status, body, JSON_TYPE, headers);
  }

  /** 503 with Retry-After: the call's promise cannot be met now. */
  unavailable(retryAfterSeconds = 1): void {
    this.fail('unavailable', undefined, [['Retry-After', String(retryAfterSeconds)]]);
  }

  /** The answer to a classified failure (gateway/failure.ts); a 503 carries Retry-After. */
  answer(outcome: Outcome): void {
    if (outcome.code === 'unavailable') return this.unavailable(outcome.retryAfter);
    this.fail(outcome.code, outcome.items);
  }

  /** A CORS preflight (OPTIONS): which methods and request headers a browser may use on the path. */
  preflight(allow: string): void {
    this.send(204, '', JSON_TYPE, [
      ['Allow', `${allow}, OPTIONS`],
      ['Access-Control-Allow-Methods', allow],
      ['Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Identity-Hash'],
      ['Access-Control-Max-Age', '86400'],
    ]);
  }

  /** 405 with the Allow header listing the methods the path takes. */
  methodNotAllowed(allow: string): void {
    this.fail('method_not_allowed', undefined, [['Allow', allow]]);
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.tracker.done();
  }
}

/** What a route's handler reads from the request while it is still valid (uWS requests live one call). */
export interface RequestInfo extends RawRequest {
  /** `X-Identity-Hash`, undefined when absent. */
  identityHash: string | undefined;
}

/** A registered route as the request pipeline runs it (gateway/app.ts builds it from a declaration). */
export interface Pipeline {
  answers: RouteAnswers;
  auth: Auth;
  /** Path parameters the pattern has. */
  params: number;
  /** Body limit in bytes (API.md section 9); null for a route without a body. */
  limit: number | null;
  /** What it throws, synchronously or by rejecting, is answered by guarded(). */
  handle(ex: Exchange, caller: Caller | null, body: unknown, info: RequestInfo): void | Promise<void>;
}

type BodyResult = { ok: true; value: unknown } | { ok: false; code: ErrorCode };

/**
 * Runs `work` (a handler) at the catch boundary: what it throws or rejects with is classified once
 * (gateway/failure.ts) and answered, unless the exchange is already closed; a bug is logged either way.
 */
export function guarded(deps: GatewayDeps, ex: Exchange, what: string, work: () => void | Promise<void>): void {
  const settle = (err: unknown): void => ex.answer(deps.failures.outcome(what, err));
  try {
    const done = work();
    if (done) done.catch(settle);
  } catch (err) {
    settle(err);
  }
}

/**
 * Calls `found` with the key's caller: at once when cached, else after the lookup; a failed lookup
 * is answered by its kind. A caller the route admits first takes a rate-limit token (429 when none).
 */
function withCaller(deps: GatewayDeps, ex: Exchange, restOnly: boolean, key: string, found: (caller: Caller | null) => void): void {
  const admit = (caller: Caller | null): void =>
    caller === null || (restOnly && caller.type !== 'rest') ? found(caller) : throttle(deps, ex, caller, () => found(caller));
  const cached = deps.callers.peek(key);
  if (cached !== undefined) return admit(cached);
  deps.callers.load(key).then(admit, (err: unknown) => ex.answer(deps.failures.outcome('key lookup', err)));
}

/** 401 for an unknown or revoked key, 403 for an SDK key on a REST-only route; true when the caller may go on. */
function admitted(ex: Exchange, restOnly: boolean, caller: Caller | null): caller is Caller {
  if (caller === null) ex.fail('invalid_key');
  else if (restOnly && caller.type !== 'rest') ex.fail('wrong_key_type');
  else return true;
  return false;
}

/**
 * The uWS handler of a route. Checks in API order: draining (503) and auth (401, 403) for keyed
 * routes, rate limit (429), then for a body Content-Type (415), size (413, from Content-Length at
 * once, else while streaming), UTF-8 and JSON (400). The key lookup and the token take run while
 * the body streams; the answer is decided when both are done.
 */
export function pipeline(deps: GatewayDeps, route: Pipeline): (res: HttpResponse, req: HttpRequest) => void {
  const restOnly = route.auth === 'rest';
  return (res, req) => {
    const ex = new Exchange(res, route.answers, deps.tracker);
    // uWS returns undefined, not '', for a URL without a query.
    const info: RequestInfo = {
      params: Array.from({ length: route.params }, (_, i) => req.getParameter(i) ?? ''),
      query: req.getQuery() ?? '',
      identityHash: req.getHeader('x-identity-hash') || undefined,
    };
    let caller: Caller | null | undefined;
    let body: BodyResult | undefined = route.limit === null ? { ok: true, value: undefined } : undefined;
    const decide = (): void => {
      if (caller === undefined || body === undefined || !ex.open) return;
      if (route.auth !== 'none' && !admitted(ex, restOnly, caller)) return;
      if (!body.ok) return ex.fail(body.code);
      const [who, value] = [caller, body.value];
      guarded(deps, ex, route.answers.route, () => route.handle(ex, who, value, info));
    };
    if (route.auth === 'none') caller = null;
    else {
      if (deps.tracker.draining) return ex.unavailable();
      const key = bearerKey(req.getHeader('authorization'));
      if (key === null) return ex.fail('missing_key');
      withCaller(deps, ex, restOnly, key, (found) => {
        caller = found;
        decide();
      });
    }
    if (route.limit === null) return decide();
    const limit = route.limit;
    const early = headerError(req.getHeader('content-type'), req.getHeader('content-length'), limit);
    if (early !== null) {
      body = { ok: false, code: early };
      return decide();
    }
    readBody(res, ex, limit, (result) => {
      body = result;
      decide();
    });
  };
}

/** 415 for a non-JSON Content-Type (a charset other than UTF-8 included), 413 for a declared size over the limit. */
function headerError(contentType: string, contentLength: string, limit: number): ErrorCode | null {
  if (contentType !== JSON_TYPE && !isJsonType(contentType)) return 'unsupported_media_type';
  if (contentLength !== '' && Number(contentLength) > limit) return 'payload_too_large';
  return null;
}

function isJsonType(header: string): boolean {
  const [type = '', ...params] = header.split(';');
  if (type.trim().toLowerCase() !== JSON_TYPE) return false;
  return params.every((p) => {
    const [name = '', value = ''] = p.split('=');
    if (name.trim().toLowerCase() !== 'charset') return true;
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    return charset === 'utf-8' || charset === 'utf8';
  });
}

/**
 * Streams the body, keeping at most `limit` bytes: past it, buffering stops and the result is 413
 * (uWS reads and drops the rest, so the connection stays usable). A body in one chunk is parsed
 * straight from uWS's buffer, which is only valid during the callback.
 */
function readBody(res: HttpResponse, ex: Exchange, limit: number, done: (result: BodyResult) => void): void {
  let chunks: Buffer[] | null = null;
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over || !ex.open) return;
    size += chunk.byteLength;
    if (size > limit) {
      over = true;
      chunks = null;
      return done({ ok: false, code: 'payload_too_large' });
    }
    if (isLast && chunks === null) return done(parse(new Uint8Array(chunk)));
    chunks ??= [];
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) done(parse(Buffer.concat(chunks, size)));
  });
}

function parse(bytes: Uint8Array): BodyResult {
  try {
    return { ok: true, value: parseJson(bytes) };
  } catch {
    return { ok: false, code: 'invalid_json' };
  }
}
