import type { ClickHouse } from '../../engine/infra/clickhouse/client.ts';
import type { GatewayDeps } from '../server/deps.ts';
import type { Exchange } from '../server/exchange.ts';

/**
 * Runs one read against the process's ClickHouse and answers 200 with its JSON. A failure
 * rejects, for the route's catch boundary to answer by its kind (gateway/server/failure.ts): 503 when
 * ClickHouse cannot be reached or answer in time, 500 for anything else.
 */
export async function answerFromClickHouse(deps: GatewayDeps, ex: Exchange, read: (ch: ClickHouse) => Promise<unknown>): Promise<void> {
  const ch = await deps.clickhouse.get();
  ex.send(200, JSON.stringify(await read(ch)));
}
