import Type from 'typebox';
import { httpRoute } from '../server/route.ts';
import { ingestLag } from './health.ts';

export const metrics = httpRoute({
  method: 'get',
  path: '/metrics',
  auth: 'none',
  summary: 'Prometheus text format',
  answers: { 200: { schema: Type.String(), contentType: 'text/plain' } },
  handler:
    ({ deps }) =>
    async ({ ex }) => {
      // Without Redis the lag keeps its last value; the other metrics still answer.
      await ingestLag(deps.redis, deps.topology).then(
        (lag) => deps.metrics.ingestLag.set(lag),
        (err: unknown) => deps.failures.report('ingest lag', err),
      );
      ex.send(200, await deps.metrics.registry.metrics(), deps.metrics.registry.contentType);
    },
});
