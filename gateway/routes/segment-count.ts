import { countAudience } from '../../engine/infra/clickhouse/filters/stream.ts';
import { resolveSegment } from '../../engine/state/segments/audience.ts';
import { SegmentStore } from '../../engine/state/segments/store.ts';
import { CallerError } from '../../schemas/errors.ts';
import { SegmentCount } from '../../schemas/segments.ts';
import { httpRoute } from '../server/route.ts';
import { SegmentParams } from './params.ts';
import { answerFromClickHouse } from './query-answer.ts';

export const segmentCount = httpRoute({
  method: 'get',
  path: '/api/segments/{name}/count',
  auth: 'rest',
  summary: 'The current number of users in a segment',
  params: SegmentParams,
  answers: { 200: SegmentCount },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const store = new SegmentStore(deps.redis, deps.topology);
    return async ({ ex, caller, params: { name } }) => {
      const compiled = await resolveSegment(store, caller.project, name);
      if (compiled === null) throw new CallerError('not_found');
      await answerFromClickHouse(deps, ex, async (ch): Promise<SegmentCount> => ({ name, count: await countAudience(ch, compiled) }));
    };
  },
});
