import { join } from 'node:path';
import type { Config } from '../../schemas/config.ts';
import { Keystore } from '../keystore.ts';
import { createRedis } from '../redis.ts';
import type { RoleContext, RunningRole } from '../roles.ts';
import { Topology } from '../topology.ts';
import { OperatorKeys } from './auth.ts';
import type { SqlBackend } from './backend.ts';
import { EmbeddedSql } from './embedded.ts';
import { sqlLimits } from './limits.ts';
import { startSqlListener } from './listener.ts';
import { ServerSql } from './server.ts';

/**
 * The `sql` role: the SQL listener on SQL_HOST:SQL_PORT (docs/sql.md), off when SQL_PORT is 0. On
 * the embedded engine it runs in the process that holds the engine, so `engine start` opens
 * ClickHouse before it starts this role (engine/roles.ts, ClickHouseRoles).
 */
export async function sqlRole(ctx: RoleContext): Promise<RunningRole> {
  const { config, log } = ctx;
  if (config.SQL_PORT === 0) {
    log.info('sql listener off', { SQL_PORT: 0 });
    return { name: 'sql', close: async () => undefined };
  }
  if (config.CLICKHOUSE_URL === undefined) await ctx.clickhouse.get();
  const backend = sqlBackend(config);
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  const keys = new OperatorKeys(new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)), config.KEY_CACHE_MS);
  try {
    const listener = await startSqlListener({ host: config.SQL_HOST, port: config.SQL_PORT, backend, keys, limits: sqlLimits(config), log, shutdownMs: config.SHUTDOWN_MS });
    log.info('sql listening', { host: config.SQL_HOST, port: listener.port });
    let closing: Promise<void> | undefined;
    return {
      name: 'sql',
      close: () => {
        closing ??= (async () => {
          await listener.close();
          redis.disconnect();
          await backend.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    redis.disconnect();
    await backend.close();
    throw err;
  }
}

/** The engine's own ClickHouse: its server, or the embedded engine under DATA_DIR. */
export function sqlBackend(config: Pick<Config, 'CLICKHOUSE_URL' | 'DATA_DIR'>): SqlBackend {
  return config.CLICKHOUSE_URL === undefined ? new EmbeddedSql(join(config.DATA_DIR, 'clickhouse')) : new ServerSql(config.CLICKHOUSE_URL);
}
