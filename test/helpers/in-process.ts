import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { gatewayRole } from '../../gateway/role.ts';
import type { ClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { ClickHouseStore } from '../../engine/infra/clickhouse/store.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import type { RoleContext, RoleFactory, RunningRole } from '../../engine/infra/runner/roles.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { newWorkerId } from '../../engine/infra/process/worker-id.ts';
import type { Config } from '../../schemas/config.ts';
import { testDatabase } from '../clickhouse-server/database.ts';
import { serverEnv } from './http-server.ts';
import { localOutbound } from './outbound.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from './redis.ts';

export interface InProcess {
  config: Config;
  topology: Topology;
  redis: RedisClient;
  project: CreatedProject;
  /** The process's ClickHouse, migrated: the same client the roles use. */
  clickhouse: ClickHouse;
  store: ClickHouseStore;
  /** Base URL of the gateway. */
  url: string;
  /** Starts another role of this process (say the recorder); it is closed when the test ends. */
  run(role: RoleFactory): Promise<RunningRole>;
}

/**
 * A gateway running inside the test process with its own key prefix, one project, and the
 * embedded ClickHouse under a fresh DATA_DIR (or a fresh database of TEST_CLICKHOUSE_URL). The
 * test and the routes share one ClickHouse client (the embedded engine allows one per process),
 * so a test can insert rows and read them back through the API. Everything is closed and removed when the test ends.
 */
export async function inProcessGateway(t: Test, env: Record<string, string> = {}): Promise<InProcess> {
  const prefix = testPrefix();
  const dataDir = mkdtempSync(join(tmpdir(), 'engine-inproc-'));
  const database = await testDatabase();
  const config = loadConfig({ REDIS_URL, KEY_PREFIX: prefix, DATA_DIR: dataDir, PORT: '0', LEASE_MS: '1000', PARTITIONS: '8', LOG_LEVEL: 'warn', CHECK_ANSWERS: 'true', ...localOutbound, ...serverEnv, ...database.env, ...env });
  const log = createLogger(config.LOG_LEVEL);
  const store = new ClickHouseStore(config, log);
  const ctx: RoleContext = { config, log, metrics: new Metrics(), workerId: newWorkerId(), clickhouse: store };
  const redis = createRedis(config);
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const running: RunningRole[] = [];
  t.teardown(async () => {
    for (const role of running.reverse()) await role.close();
    await store.close();
    await database.drop();
    redis.disconnect();
    await cleanupPrefix(prefix);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const project = await new Keystore(redis, topology).createProject('test', false);
  const clickhouse = await store.get();
  const listening = new Promise<number>((resolve) => {
    ctx.log = { ...log, info: (msg, fields) => (msg === 'listening' && typeof fields?.['port'] === 'number' ? resolve(fields['port']) : log.info(msg, fields)) };
  });
  running.push(await gatewayRole(ctx));
  const port = await listening;
  ctx.log = log;
  return {
    config,
    topology,
    redis,
    project,
    clickhouse,
    store,
    url: `http://127.0.0.1:${port}`,
    run: async (role) => {
      const started = await role(ctx);
      running.push(started);
      return started;
    },
  };
}
