import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHostServer } from '../../engine/infra/clickhouse/host/server.ts';

export interface ClickHouseStandIn {
  /** Base URL, e.g. http://127.0.0.1:41234; append `/<database>` to pick a database. */
  url: string;
  /** Stops listening, closes the engine and removes its data directory. */
  close(): Promise<void>;
}

/**
 * A ClickHouse server for the server-mode suites: the engine's own ClickHouse host
 * (engine/infra/clickhouse/host/server.ts) over a fresh data directory, on a TCP port of 127.0.0.1,
 * in this process and without a password.
 */
export async function startClickHouseStandIn(): Promise<ClickHouseStandIn> {
  const dataPath = mkdtempSync(join(tmpdir(), 'engine-ch-http-'));
  const server = await startHostServer({ dataPath, listen: { port: 0 } });
  return {
    url: `http://127.0.0.1:${server.port ?? 0}`,
    close: async () => {
      await server.close();
      rmSync(dataPath, { recursive: true, force: true });
    },
  };
}
