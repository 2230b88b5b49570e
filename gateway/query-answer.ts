import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { ClickHouse } from '../engine/clickhouse/client.ts';
import type { GatewayDeps } from './context.ts';
import { getRoute, RouteMetric, type Exchange } from './http.ts';
import type { Checked } from './validation.ts';

/** Most one warning per this long while ClickHouse fails, so an outage does not flood the log. */
const WARN_EVERY_MS = 1000;
let lastWarn = 0;

/**
 * Runs one read against the process's ClickHouse and answers 200 with its JSON, or 503 (with
 * Retry-After) when ClickHouse cannot be opened or the query fails (API.md section 2).
 */
export function answerFromClickHouse(deps: GatewayDeps, ex: Exchange, what: string, read: (ch: ClickHouse) => Promise<unknown>): void {
  deps.clickhouse
    .get()
    .then(read)
    .then(
      (body) => ex.send(200, JSON.stringify(body)),
      (err: unknown) => {
        const now = Date.now();
        if (now - lastWarn >= WARN_EVERY_MS) {
          lastWarn = now;
          deps.log.warn(`${what} failed`, { err: err instanceof Error ? err.message : String(err) });
        }
        ex.unavailable();
      },
    );
}

export interface QueryRouteSpec<Q> {
  path: string;
  /** Checks the query string: every bad parameter is a 400 naming it. */
  check: (query: string) => Checked<Q>;
  /** For the log when ClickHouse fails. */
  what: string;
  /** The answer's body for the caller's project. */
  read: (ch: ClickHouse, project: string, query: Q) => Promise<unknown>;
}

/** A REST-key GET whose checked query string becomes one ClickHouse read (answerFromClickHouse). */
export function queryRoute<Q>(deps: GatewayDeps, spec: QueryRouteSpec<Q>): (res: HttpResponse, req: HttpRequest) => void {
  return getRoute(deps, {
    metric: new RouteMetric(deps.metrics.requests, spec.path),
    restOnly: true,
    hasParam: false,
    handle: (ex, caller, info) => {
      const checked = spec.check(info.query);
      if (!checked.ok) return ex.fail('validation_failed', checked.errors);
      answerFromClickHouse(deps, ex, spec.what, (ch) => spec.read(ch, caller.project, checked.value));
    },
  });
}
