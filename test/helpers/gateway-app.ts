import type { Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { routes } from '../../gateway/routes/table.ts';
import { serve } from '../../gateway/server/app.ts';
import { CallerCache } from '../../gateway/server/auth.ts';
import { chooseServer } from '../../gateway/server/choice.ts';
import type { GatewayDeps } from '../../gateway/server/deps.ts';
import { Failures } from '../../gateway/server/failure.ts';
import { RateLimiter } from '../../gateway/server/rate-limit.ts';
import type { Route } from '../../gateway/server/route.ts';
import { Tracker } from '../../gateway/server/tracker.ts';
import { serverEnv } from './http-server.ts';
import { localOutbound } from './outbound.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from './redis.ts';

/** A gateway app built in the test process from a route table and dependencies the test picks. */

/** Log lines the process writes to stderr (warnings and errors) while the test runs. */
export function captureStderr(t: Test): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    for (const line of String(chunk).split('\n')) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not a log line.
      }
    }
    return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  t.teardown(() => {
    process.stderr.write = write;
  });
  return lines;
}

/**
 * A gateway app on port 0 built from deps whose ingest sink and ClickHouse the test supplies
 * (GatewayDeps' narrow interfaces), on real Redis under a fresh prefix, logging through the real
 * logger.
 */
export async function gatewayWith(t: Test, parts: Pick<GatewayDeps, 'ingest' | 'clickhouse'>, table: readonly Route[] = routes): Promise<{ url: string; project: CreatedProject; keystore: Keystore }> {
  const prefix = testPrefix();
  const config = loadConfig({ REDIS_URL, KEY_PREFIX: prefix, PARTITIONS: '8', LOG_LEVEL: 'warn', CHECK_ANSWERS: 'true', ...localOutbound, ...serverEnv });
  const redis = createRedis(config, { commandTimeout: 1000 });
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const keystore = new Keystore(redis, topology);
  const log = createLogger('warn');
  const metrics = new Metrics();
  const failures = new Failures(log);
  const deps: GatewayDeps = {
    config,
    server: chooseServer(config.HTTP_SERVER),
    log,
    metrics,
    redis,
    topology,
    callers: new CallerCache(keystore, 1000),
    limiter: new RateLimiter(redis, topology, metrics.rateLimited, failures),
    tracker: new Tracker(),
    failures,
    ...parts,
  };
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const server = await serve(deps, table, '127.0.0.1', 0);
  t.teardown(() => server.close());
  return { url: `http://127.0.0.1:${server.port}`, project: await keystore.createProject('test', false), keystore };
}

