import type { Counter } from 'prom-client';
import { ErrorCodes, type ErrorCode, type ErrorItem } from '../../schemas/errors.ts';
import type { Outcome } from './failure.ts';
import type { Tracker } from './tracker.ts';
import type { Header, Reply } from './wire.ts';

/** Error bodies (docs/api.md#errors) with the registry's message, built once. */
const defaultBodies = Object.fromEntries(
  Object.entries(ErrorCodes).map(([code, e]) => [code, JSON.stringify({ errors: [{ code, message: e.message }] })]),
) as Record<ErrorCode, string>;

export const JSON_TYPE = 'application/json';

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
 * One HTTP request/response on either server (./wire.ts). The answer is written once, never after
 * the client aborted (uWS forbids both).
 */
export class Exchange {
  private finished = false;

  constructor(
    private readonly res: Reply,
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
    // Browsers may call the API from any origin: keys travel in Authorization, never in cookies.
    const all: Header[] = [...headers, ['Access-Control-Allow-Origin', '*']];
    // A page of another origin reads Retry-After only when it is exposed.
    if (headers.some(([name]) => name === 'Retry-After')) all.push(['Access-Control-Expose-Headers', 'Retry-After']);
    if (status !== 204) all.push(['Content-Type', contentType]);
    this.res.end(status, all, body);
  }

  /** Answers with a WebSocket upgrade (101); `upgrade` performs it on the server. */
  upgrade(upgrade: () => void): void {
    if (this.finished) return;
    this.finish();
    this.metric.inc(101);
    this.res.cork(upgrade);
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
