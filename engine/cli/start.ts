import type { Config } from '../../schemas/config.ts';
import { createLogger } from '../log.ts';
import { Metrics } from '../metrics.ts';
import { ClickHouseStore } from '../clickhouse/store.ts';
import { ClickHouseRoles, RoleNames, type RoleFactory, type RoleName, type RunningRole } from '../roles.ts';
import { newWorkerId } from '../worker-id.ts';
import { defineCommand, type Command } from './command.ts';
import { UsageError } from './usage.ts';

/** `engine start`, offering the roles this build has (`available`, in RoleNames order). */
export function startCommand(available: Partial<Record<RoleName, RoleFactory>>): Command {
  const built = RoleNames.filter((r) => available[r]);
  return defineCommand({
    path: ['start'],
    args: [],
    options: {
      roles: { kind: 'string', value: built.join(','), help: `the roles to run, comma-separated (default: all of ${built.join(', ')})` },
      port: { kind: 'integer', value: '<port>', help: 'the HTTP port of the gateway role; 0 picks a free one (default: PORT, 8080)' },
    },
    summary: 'Runs the given roles in this process until SIGTERM or SIGINT.',
    run: (config, { options }) => start(config, available, options.roles, options.port),
  });
}

/** Runs the roles until SIGTERM or SIGINT, then closes them in reverse order. */
async function start(
  baseConfig: Config,
  available: Partial<Record<RoleName, RoleFactory>>,
  roles: string | undefined,
  port: number | undefined,
): Promise<number> {
  if (port !== undefined && port > 65535) throw new UsageError(`--port must be a number up to 65535, got ${port}`);
  const config: Config = Object.freeze({ ...baseConfig, ...(port === undefined ? {} : { PORT: port }) });
  const names = selectRoles(roles, available);
  const workerId = newWorkerId();
  const log = createLogger(config.LOG_LEVEL, { worker: workerId });
  const metrics = new Metrics();
  const clickhouse = new ClickHouseStore(config, log);
  const running: RunningRole[] = [];
  try {
    // Migrations run at start (docs/configuration.md#operations) wherever ClickHouse is needed from the first moment;
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

function selectRoles(arg: string | undefined, available: Partial<Record<RoleName, RoleFactory>>): RoleName[] {
  const built = RoleNames.filter((r) => available[r]);
  if (arg === undefined) return built;
  const asked = arg.split(',').map((s) => s.trim()).filter(Boolean);
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
