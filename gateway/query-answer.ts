import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { ClickHouse } from '../engine/clickhouse/client.ts';
import type { GatewayDeps } from './context.ts';
import { getRoute, RouteMetric, type Exchange } from './http.ts';
import { valid, type Checked } from './validation.ts';

/**
 * Runs one read against the process's ClickHouse and answers 200 with its JSON. A failure
 * rejects, for the route's catch boundary to answer by its kind (gateway/failure.ts): 503 when
 * ClickHouse cannot be reached or answer in time, 500 for anything else.
 */
export async function answerFromClickHouse(deps: GatewayDeps, ex: Exchange, read: (ch: ClickHouse) => Promise<unknown>): Promise<void> {
  const ch = await deps.clickhouse.get();
  ex.send(200, JSON.stringify(await read(ch)));
}

export interface QueryRouteSpec<Q> {
  path: string;
  /** Checks the query string: every bad parameter is a 400 naming it. */
  check: (query: string) => Checked<Q>;
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
      const query = valid(spec.check(info.query));
      return answerFromClickHouse(deps, ex, (ch) => spec.read(ch, caller.project, query));
    },
  });
}
