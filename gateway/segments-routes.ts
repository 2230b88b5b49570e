import { Ajv } from 'ajv';
import type { TemplatedApp } from 'uWebSockets.js';
import { capped, errorItem, violations } from '../engine/ajv-errors.ts';
import { checkFilters } from '../engine/clickhouse/filters/check.ts';
import { countAudience } from '../engine/clickhouse/filters/stream.ts';
import { resolveSegment } from '../engine/segments/audience.ts';
import { SegmentStore } from '../engine/segments/store.ts';
import { CallerError, type ErrorItem } from '../schemas/errors.ts';
import type { FilterEntry } from '../schemas/filters.ts';
import { ALL_SEGMENT, SegmentEnvelope, type Segment, type SegmentCount, type SegmentList } from '../schemas/segments.ts';
import type { GatewayDeps } from './context.ts';
import { bodyRoute, getRoute, pathParam, RouteMetric, type Exchange } from './http.ts';
import { answerFromClickHouse } from './query-answer.ts';
import { valid, type Checked } from './validation.ts';

export const segmentsRoutes = {
  segments: { path: '/api/segments', allow: 'GET, POST' },
  segment: { path: '/api/segments/:name', allow: 'GET, DELETE' },
  count: { path: '/api/segments/:name/count', allow: 'GET' },
} as const;

/** The body limit of segment definitions, as for notifications (API.md section 9). */
const BODY_LIMIT = 1024 * 1024;

// Compiled once per process (STYLE.md 6), twice (engine/ajv-errors.ts).
const envelope = { first: new Ajv().compile(SegmentEnvelope), all: new Ajv({ allErrors: true }).compile(SegmentEnvelope) };

/**
 * Segments (API.md 4.1, REST key): `POST` and `GET /api/segments`, `GET` and `DELETE
 * /api/segments/{name}`, `GET /api/segments/{name}/count` (the current size, from the users mirror
 * in ClickHouse). Definitions live in Redis (engine/segments/store.ts).
 */
export function registerSegmentsRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  const store = new SegmentStore(deps.redis, deps.topology);
  const metricOf = (path: string): RouteMetric => new RouteMetric(deps.metrics.requests, path);
  const list = metricOf(segmentsRoutes.segments.path);
  const one = metricOf(segmentsRoutes.segment.path);
  const count = metricOf(segmentsRoutes.count.path);
  const send = (ex: Exchange, status: number, body: Segment | SegmentList | SegmentCount): void => ex.send(status, JSON.stringify(body));
  const found = (segment: Segment | null): Segment => {
    if (segment === null) throw new CallerError('not_found');
    return segment;
  };

  app.post(
    segmentsRoutes.segments.path,
    bodyRoute(deps, {
      metric: list,
      restOnly: true,
      hasParam: false,
      limit: BODY_LIMIT,
      handle: async (ex, caller, body) => {
        const { name, filters } = valid(checkBody(body));
        const segment = await store.create(caller.project, name, filters);
        if (segment === null) throw new CallerError('idempotency_conflict', [taken(name)]);
        send(ex, 201, segment);
      },
    }),
  );

  app.get(
    segmentsRoutes.segments.path,
    getRoute(deps, {
      metric: list,
      restOnly: true,
      hasParam: false,
      handle: async (ex, caller) => send(ex, 200, { segments: await store.list(caller.project) }),
    }),
  );

  /** A route of one segment: the path's name checked (400 naming `/name`) before `handle`. */
  const named = (metric: RouteMetric, handle: (ex: Exchange, project: string, name: string) => Promise<void>) =>
    getRoute(deps, {
      metric,
      restOnly: true,
      hasParam: true,
      handle: (ex, caller, info) => handle(ex, caller.project, valid(pathParam(info.param, 'name'))),
    });

  app.get(
    segmentsRoutes.segment.path,
    named(one, async (ex, project, name) => send(ex, 200, found(await store.get(project, name)))),
  );

  app.del(
    segmentsRoutes.segment.path,
    named(one, async (ex, project, name) => {
      if (name === ALL_SEGMENT) throw new CallerError('validation_failed', [errorItem('/name', 'the All segment always exists and cannot be deleted')]);
      send(ex, 200, found(await store.delete(project, name)));
    }),
  );

  app.get(
    segmentsRoutes.count.path,
    named(count, async (ex, project, name) => {
      const compiled = await resolveSegment(store, project, name);
      if (compiled === null) throw new CallerError('not_found');
      await answerFromClickHouse(deps, ex, async (ch): Promise<SegmentCount> => ({ name, count: await countAudience(ch, compiled) }));
    }),
  );
}

/** The envelope (name, no other fields) and the filters entry by entry: the violations of both, each list bounded. */
function checkBody(body: unknown): Checked<{ name: string; filters: FilterEntry[] }> {
  const errors = capped(violations(envelope, body, ''), '');
  const value = isObject(body) ? body : {};
  const filters = value['filters'] === undefined ? null : checkFilters(value['filters'], '/filters');
  if (filters !== null && !filters.ok) errors.push(...filters.errors);
  if (errors.length > 0 || filters === null || !filters.ok) return { ok: false, errors };
  return { ok: true, value: { name: value['name'] as string, filters: filters.value } };
}

function taken(name: string): ErrorItem {
  return { code: 'idempotency_conflict', message: `A segment named ${JSON.stringify(name)} already exists.`, path: '/name' };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
