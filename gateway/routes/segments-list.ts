import { SegmentStore } from '../../engine/state/segments/store.ts';
import { SegmentList } from '../../schemas/segments.ts';
import { httpRoute } from '../server/route.ts';

export const segmentsList = httpRoute({
  method: 'get',
  path: '/api/segments',
  auth: 'rest',
  summary: 'Every segment, All included, sorted by name',
  answers: { 200: SegmentList },
  handler: ({ deps }) => {
    const store = new SegmentStore(deps.redis, deps.topology);
    return async ({ ex, caller }) => ex.send(200, JSON.stringify({ segments: await store.list(caller.project) }));
  },
});
