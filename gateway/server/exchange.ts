import type { HttpResponse } from 'uWebSockets.js';
import type { Counter } from 'prom-client';
import { ErrorCodes, type ErrorCode, type ErrorItem } from '../../schemas/errors.ts';
import type { Outcome } from './failure.ts';
import type { Tracker } from './tracker.ts';

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

/** Error bodies (docs/api.md#errors) with the registry's message, built once. */
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

  /** The answer to a classified failure (gateway/server/failure.ts); a 503 carries Retry-After. */
  answer(outcome: Outcome): void {
    if (outcome.code === 'unavailable') return this.unavailable(outcome.retryAfter);
    const retry: Header[] = outcome.retryAfter === undefined ? [] : [['Retry-After', String(outcome.retryAfter)]];
    this.fail(outcome.code, outcome.items, retry);
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
