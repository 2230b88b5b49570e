import { SegmentStore } from '../../engine/state/segments/store.ts';
import { CallerError } from '../../schemas/errors.ts';
import { Segment } from '../../schemas/segments.ts';
import { httpRoute } from '../server/route.ts';
import { SegmentParams } from './params.ts';

export const segmentGet = httpRoute({
  method: 'get',
  path: '/api/segments/{name}',
  auth: 'rest',
  summary: 'One segment',
  params: SegmentParams,
  answers: { 200: Segment },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const store = new SegmentStore(deps.redis, deps.topology);
    return async ({ ex, caller, params }) => {
      const segment = await store.get(caller.project, params.name);
      if (segment === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify(segment));
    };
  },
});
