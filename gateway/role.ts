import { join } from 'node:path';
import { Keystore } from '../engine/state/keys/keystore.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import type { RoleFactory } from '../engine/infra/runner/roles.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { workerRunsHere } from '../engine/infra/process/worker-id.ts';
import { RedisPressure } from './ingest/pressure.ts';
import { SpillJournal } from './ingest/spill-journal.ts';
import { IngestWriter } from './ingest/writer.ts';
import { routes } from './routes/table.ts';
import { serve, type Server } from './server/app.ts';
import { CallerCache } from './server/auth.ts';
import { chooseServer } from './server/choice.ts';
import type { GatewayDeps } from './server/deps.ts';
import { Failures } from './server/failure.ts';
import { RateLimiter } from './server/rate-limit.ts';
import { Tracker } from './server/tracker.ts';

/**
 * The gateway role: the HTTP/WebSocket server of the route table (gateway/routes/table.ts). It
 * logs `listening` with the real port (PORT 0 picks one) before it resolves. close() is
 * idempotent: new requests get 503, in-flight ones finish (at most SHUTDOWN_MS), then the listen
 * socket and the WebSockets close and Redis is quit.
 */
export const gatewayRole: RoleFactory = async ({ config, log, metrics, workerId, clickhouse }) => {
  // First: a forced server that cannot run here stops the start before anything connects.
  const server = chooseServer(config.HTTP_SERVER, (why) => log.info('uWebSockets.js cannot serve here; node:http serves', { why }));
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  // Its own connection without an offline queue: a write during an outage spills at once instead
  // of waiting in a queue that could still send it later, after the journal took it.
  // On a Cluster it follows redirections itself, in order (gateway/ingest/ordered-appends.ts).
  const ingestRedis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS, offlineQueue: false, followRedirections: false });
  const journal = new SpillJournal(join(config.DATA_DIR, 'spill'), workerId, config.SPILL_MAX_BYTES);
  // How full Redis is, read once a second for every request: past the watermark, writes spill.
  const pressure = new RedisPressure(redis, topology, config, metrics, log);
  const ingest = new IngestWriter(ingestRedis, topology, journal, log, {
    isLive: workerRunsHere,
    admission: pressure,
    refused: (reason) => metrics.refusedWrites.labels(reason).inc(),
    // Within the append's own timeout, with room for the XADDs before it.
    replicas: { count: config.REDIS_WAIT_REPLICAS, waitMs: Math.floor(config.REDIS_TIMEOUT_MS / 2) },
  });
  await connected(ingestRedis, config.REDIS_TIMEOUT_MS);
  await pressure.start();
  await ingest.start();
  const tracker = new Tracker();
  const failures = new Failures(log);
  const deps: GatewayDeps = {
    config,
    server,
    log,
    metrics,
    redis,
    topology,
    callers: new CallerCache(new Keystore(redis, topology), config.KEY_CACHE_MS),
    limiter: new RateLimiter(redis, topology, metrics.rateLimited, failures),
    tracker,
    ingest,
    clickhouse,
    failures,
  };
  let listening: Server;
  try {
    listening = await serve(deps, routes, config.HOST, config.PORT);
  } catch (err) {
    redis.disconnect();
    ingestRedis.disconnect();
    await pressure.close();
    await ingest.close();
    throw err;
  }
  metrics.httpServer.labels(server).set(1);
  log.info('listening', { port: listening.port, host: config.HOST, server });

  let closing: Promise<void> | null = null;
  const shutdown = async (): Promise<void> => {
    tracker.draining = true;
    await tracker.whenIdle(config.SHUTDOWN_MS);
    listening.close();
    await pressure.close();
    await ingest.close();
    await redis.quit().catch(() => redis.disconnect());
    await ingestRedis.quit().catch(() => ingestRedis.disconnect());
  };
  return { name: 'gateway', close: () => (closing ??= shutdown()) };
};

/** Waits up to `ms` for the first connection, so early writes need not spill; a Redis that is down still lets the gateway start. */
function connected(redis: RedisClient, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
    function done(): void {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
  });
}
