import Type from 'typebox';
import { OVERLOADED_RETRY_S } from '../ingest/writer.ts';
import { httpRoute } from '../server/route.ts';
import { pingWithin } from './health.ts';

/** How long /readyz waits for Redis to answer PING. */
const READY_TIMEOUT_MS = 500;

export const readyz = httpRoute({
  method: 'get',
  path: '/readyz',
  auth: 'none',
  summary: 'Redis and ClickHouse answer, and buffered writes are taken',
  answers: { 200: Type.Object({ ok: Type.Literal(true), server: Type.Union([Type.Literal('uws'), Type.Literal('node')], { description: 'the HTTP server that serves (HTTP_SERVER)' }) }) },
  errors: ['unavailable', 'overloaded'],
  handler:
    ({ deps }) =>
    async ({ ex }) => {
      if (deps.tracker.draining) return ex.unavailable();
      const refusing = deps.ingest.refusing?.() ?? null;
      if (refusing !== null) return ex.answer({ code: 'overloaded', items: [{ code: 'overloaded', message: refusing }], retryAfter: OVERLOADED_RETRY_S });
      const [redis, clickhouse] = await Promise.all([pingWithin(deps.redis, READY_TIMEOUT_MS), deps.clickhouse.ping()]).catch(() => [false, false]);
      if (redis && clickhouse) ex.send(200, `{"ok":true,"server":"${deps.server}"}`);
      else ex.unavailable();
    },
});

