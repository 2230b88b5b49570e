import type { Config } from '../../schemas/config.ts';
import { createLogger } from '../log.ts';
import { Metrics } from '../metrics.ts';
import { ClickHouseStore } from '../clickhouse/store.ts';
import { ClickHouseRoles, RoleNames, type RoleFactory, type RoleName, type RunningRole } from '../roles.ts';
import { newWorkerId } from '../worker-id.ts';
import type { Parsed } from './main.ts';
import { UsageError } from './usage.ts';

/**
 * `engine start [--roles a,b] [--port N]`: runs the given roles (default: every role this build
 * has) in this process until SIGTERM or SIGINT, then closes them in reverse order.
 */
export async function startCommand(
  baseConfig: Config,
  available: Partial<Record<RoleName, RoleFactory>>,
  { values }: Parsed,
): Promise<number> {
  const port = values['port'];
  if (port !== undefined && !/^\d{1,5}$/.test(String(port))) throw new UsageError(`--port must be a number, got "${port}"`);
  const config: Config = Object.freeze({ ...baseConfig, ...(port === undefined ? {} : { PORT: Number(port) }) });
  const names = selectRoles(values['roles'], available);
  const workerId = newWorkerId();
  const log = createLogger(config.LOG_LEVEL, { worker: workerId });
  const metrics = new Metrics();
  const clickhouse = new ClickHouseStore(config, log);
  const running: RunningRole[] = [];
  try {
    // Migrations run at start (API.md 10) wherever ClickHouse is needed from the first moment;
    // a gateway alone opens it on its first query, so several gateways may share one machine.
    if (names.some((name) => ClickHouseRoles.includes(name))) await clickhouse.get();
    for (const name of names) {
      const factory = available[name];
      if (factory) running.push(await factory({ config, log, metrics, workerId, clickhouse }));
    }
  } catch (err) {
    log.error('start failed', { err, clickhouse: clickhouse.location });
    await closeAll(running);
    await clickhouse.close();
    return 1;
  }
  log.info('started', { roles: names });
  // The process runs until a signal, even when no role holds a handle open (say, all are idle).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  clearInterval(keepAlive);
  log.info('stopping');
  const timer = setTimeout(() => process.exit(1), config.SHUTDOWN_MS + 1000);
  await closeAll(running);
  await clickhouse.close();
  clearTimeout(timer);
  return 0;
}

function selectRoles(arg: string | boolean | undefined, available: Partial<Record<RoleName, RoleFactory>>): RoleName[] {
  const built = RoleNames.filter((r) => available[r]);
  if (arg === undefined || arg === true) return built;
  const asked = String(arg).split(',').map((s) => s.trim()).filter(Boolean);
  for (const name of asked) {
    if (!(RoleNames as readonly string[]).includes(name)) throw new UsageError(`unknown role "${name}" (roles: ${RoleNames.join(', ')})`);
    if (!available[name as RoleName]) throw new UsageError(`role "${name}" is not part of this version (available: ${built.join(', ')})`);
  }
  if (asked.length === 0) throw new UsageError('--roles needs at least one role');
  return asked as RoleName[];
}

async function closeAll(running: RunningRole[]): Promise<void> {
  for (const role of [...running].reverse()) await role.close();
}
