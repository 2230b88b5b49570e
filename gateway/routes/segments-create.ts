import { SegmentStore } from '../../engine/state/segments/store.ts';
import { CallerError } from '../../schemas/errors.ts';
import { Segment, SegmentBody } from '../../schemas/segments.ts';
import { httpRoute } from '../server/route.ts';
import { checkSegmentBody } from './segment-body.ts';

export const segmentsCreate = httpRoute({
  method: 'post',
  path: '/api/segments',
  auth: 'rest',
  summary: 'Create a segment (a second one of the same name is 409)',
  // As for notifications (docs/api.md#limits).
  body: { schema: SegmentBody, limit: 1024 * 1024, check: checkSegmentBody },
  answers: { 201: Segment },
  errors: ['already_exists'],
  handler: ({ deps }) => {
    const store = new SegmentStore(deps.redis, deps.topology);
    return async ({ ex, caller, body: { name, filters } }) => {
      const segment = await store.create(caller.project, name, filters);
      if (segment === null) {
        throw new CallerError('already_exists', [{ code: 'already_exists', message: `A segment named ${JSON.stringify(name)} already exists.`, path: '/name' }]);
      }
      ex.send(201, JSON.stringify(segment));
    };
  },
});
