import type { ClickHouse } from '../engine/clickhouse/client.ts';
import type { GatewayDeps } from './context.ts';
import type { Exchange } from './http.ts';

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
