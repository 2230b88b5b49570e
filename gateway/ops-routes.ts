import { readFileSync } from 'node:fs';
import type { TemplatedApp } from 'uWebSockets.js';
import { openApiDocument } from '../schemas/openapi.ts';
import type { RedisClient } from '../engine/redis.ts';
import { APPLY_GROUP, type Topology } from '../engine/topology.ts';
import type { GatewayDeps } from './context.ts';
import { docsPage } from './docs-page.ts';
import { Exchange, guarded, RouteMetric } from './http.ts';

export const opsRoutes = {
  healthz: { path: '/healthz', allow: 'GET' },
  readyz: { path: '/readyz', allow: 'GET' },
  metrics: { path: '/metrics', allow: 'GET' },
  docs: { path: '/api/docs', allow: 'GET' },
  openapi: { path: '/api/openapi.json', allow: 'GET' },
} as const;

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
/** Built once: the document only changes with the code. */
const openApiJson = JSON.stringify(openApiDocument(version));

/** How long /readyz waits for Redis to answer PING. */
const READY_TIMEOUT_MS = 500;

/** `/healthz`, `/readyz`, `/metrics`, `/api/docs`, `/api/openapi.json` (API.md section 7): no key needed. */
export function registerOpsRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  const metricOf = (path: string): RouteMetric => new RouteMetric(deps.metrics.requests, path);
  const health = metricOf(opsRoutes.healthz.path);
  const ready = metricOf(opsRoutes.readyz.path);
  const metrics = metricOf(opsRoutes.metrics.path);

  app.get(opsRoutes.healthz.path, (res) => new Exchange(res, health, deps.tracker).send(200, '{"ok":true}'));
  const docs = metricOf(opsRoutes.docs.path);
  app.get(opsRoutes.docs.path, (res) => new Exchange(res, docs, deps.tracker).send(200, docsPage, 'text/html; charset=utf-8'));
  const openapi = metricOf(opsRoutes.openapi.path);
  app.get(opsRoutes.openapi.path, (res) => new Exchange(res, openapi, deps.tracker).send(200, openApiJson));

  app.get(opsRoutes.readyz.path, (res) => {
    const ex = new Exchange(res, ready, deps.tracker);
    if (deps.tracker.draining) return ex.unavailable();
    Promise.all([pingWithin(deps.redis, READY_TIMEOUT_MS), deps.clickhouse.ping()]).then(
      ([redis, clickhouse]) => (redis && clickhouse ? ex.send(200, '{"ok":true}') : ex.unavailable()),
      () => ex.unavailable(),
    );
  });

  app.get(opsRoutes.metrics.path, (res) => {
    const ex = new Exchange(res, metrics, deps.tracker);
    guarded(deps, ex, opsRoutes.metrics.path, async () => {
      // Without Redis the lag keeps its last value; the other metrics still answer.
      await ingestLag(deps.redis, deps.topology).then(
        (lag) => deps.metrics.ingestLag.set(lag),
        (err: unknown) => deps.failures.report('ingest lag', err),
      );
      ex.send(200, await deps.metrics.registry.metrics(), deps.metrics.registry.contentType);
    });
  });
}

async function pingWithin(redis: RedisClient, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([redis.ping().then((r) => r === 'PONG'), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Entries not yet applied, summed over partitions: the `lag` of group "apply" (XINFO GROUPS), its
 * pending count when Redis cannot tell the lag, or the whole stream before the group exists.
 */
export async function ingestLag(redis: RedisClient, topology: Topology): Promise<number> {
  const lags = await Promise.all(
    Array.from({ length: topology.partitions }, async (_, p) => {
      const key = topology.ingest(p);
      let groups: unknown;
      try {
        groups = await redis.xinfo('GROUPS', key);
      } catch (err) {
        if (err instanceof Error && /no such key/i.test(err.message)) return 0;
        throw err;
      }
      const group = Array.isArray(groups) ? groups.map(fieldsOf).find((g) => g.get('name') === APPLY_GROUP) : undefined;
      if (group === undefined) return redis.xlen(key);
      const lag = group.get('lag') ?? group.get('pending');
      return typeof lag === 'number' ? lag : 0;
    }),
  );
  return lags.reduce((a, b) => a + b, 0);
}

/** A flat [name, value, name, value, ...] reply as a map. */
function fieldsOf(reply: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), reply[i + 1]);
  return out;
}
