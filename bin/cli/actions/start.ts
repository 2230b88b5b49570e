import type { Config } from '../../../schemas/config.ts';
import { ClickHouseStore } from '../../../engine/infra/clickhouse/store.ts';
import { ConfigError } from '../../../engine/infra/process/config.ts';
import { createLogger } from '../../../engine/infra/process/log.ts';
import { Metrics } from '../../../engine/infra/process/metrics.ts';
import { ClickHouseRoles, type RoleFactory, type RoleName, type RunningRole } from '../../../engine/infra/runner/roles.ts';
import { newWorkerId } from '../../../engine/infra/process/worker-id.ts';

/**
 * What `engine start` does: runs the roles `names` until SIGTERM or SIGINT, then closes them in
 * reverse order. 1 when one fails to start (those started are closed), 2 when a setting cannot be
 * met on this machine (a role throws ConfigError: one line on stderr, as for a bad value).
 */
export async function runRoles(config: Config, names: readonly RoleName[], available: Partial<Record<RoleName, RoleFactory>>): Promise<number> {
  const workerId = newWorkerId();
  const log = createLogger(config.LOG_LEVEL, { worker: workerId });
  const metrics = new Metrics();
  const clickhouse = new ClickHouseStore(config, log);
  const running: RunningRole[] = [];
  try {
    // Migrations run at start (docs/configuration.md#operations) wherever ClickHouse is needed
    // from the first moment; a gateway alone opens it on its first query, so several gateways may
    // share one machine.
    if (names.some((name) => ClickHouseRoles.includes(name))) await clickhouse.get();
    for (const name of names) {
      const factory = available[name];
      if (factory) running.push(await factory({ config, log, metrics, workerId, clickhouse }));
    }
  } catch (err) {
    if (err instanceof ConfigError) console.error(`engine: ${err.message}`);
    else log.error('start failed', { err, clickhouse: clickhouse.location });
    await closeAll(running);
    await clickhouse.close();
    return err instanceof ConfigError ? 2 : 1;
  }
  // Listening before `started` is told: a signal sent on reading that line stops the roles
  // rather than killing the process, however late this process runs after writing it.
  const signaled = new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('started', { roles: names });
  // The process runs until a signal, even when no role holds a handle open (say, all are idle).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  await signaled;
  clearInterval(keepAlive);
  log.info('stopping', { roles: names });
  const timer = setTimeout(() => {
    log.error('stop timed out', { roles: names, after_ms: config.SHUTDOWN_MS + 1000 });
    process.exit(1);
  }, config.SHUTDOWN_MS + 1000);
  await closeAll(running);
  await clickhouse.close();
  clearTimeout(timer);
  log.info('stopped', { roles: names });
  return 0;
}

async function closeAll(running: RunningRole[]): Promise<void> {
  for (const role of [...running].reverse()) await role.close();
}
