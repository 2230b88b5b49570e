import { hostEndpoint } from '../../engine/infra/clickhouse/client.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleContext, RunningRole } from '../../engine/infra/runner/roles.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { OperatorKeys } from './auth.ts';
import { sqlBackend } from './server.ts';
import { sqlLimits } from './limits.ts';
import { startSqlListener } from './listener.ts';

/**
 * The `sql` role: the SQL listener on SQL_HOST:SQL_PORT (docs/sql.md), off when SQL_PORT is 0. On
 * the embedded engine it runs in the process that started the engine's own process, whose socket
 * only it knows, so `engine start` opens ClickHouse before it starts this role (engine/infra/runner/roles.ts,
 * ClickHouseRoles).
 */
export async function sqlRole(ctx: RoleContext): Promise<RunningRole> {
  const { config, log } = ctx;
  if (config.SQL_PORT === 0) {
    log.info('sql listener off', { SQL_PORT: 0 });
    return { name: 'sql', close: async () => undefined };
  }
  const host = config.CLICKHOUSE_URL === undefined ? hostEndpoint(await ctx.clickhouse.get()) : undefined;
  const backend = sqlBackend(config, host);
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
        })();
        return closing;
      },
    };
  } catch (err) {
    redis.disconnect();
    // An operator's listener must not stop ingest and sends: another process (a second engine on
    // this host) holding the port leaves the engine running without it, said in the log.
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    log.error('sql listener not started: the address is in use; set SQL_PORT to a free port, or 0 to turn it off', {
      host: config.SQL_HOST,
      port: config.SQL_PORT,
    });
    return { name: 'sql', close: async () => undefined };
  }
}
