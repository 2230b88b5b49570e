import { errorItem } from '../../engine/infra/validation/ajv-errors.ts';
import { SegmentStore } from '../../engine/state/segments/store.ts';
import { CallerError } from '../../schemas/errors.ts';
import { ALL_SEGMENT, Segment } from '../../schemas/segments.ts';
import { httpRoute } from '../server/route.ts';
import { SegmentParams } from './params.ts';

export const segmentDelete = httpRoute({
  method: 'delete',
  path: '/api/segments/{name}',
  auth: 'rest',
  summary: 'Delete a segment (All cannot be deleted: 400); answers the deleted segment',
  params: SegmentParams,
  answers: { 200: Segment },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const store = new SegmentStore(deps.redis, deps.topology);
    return async ({ ex, caller, params: { name } }) => {
      if (name === ALL_SEGMENT) throw new CallerError('validation_failed', [errorItem('/name', 'the All segment always exists and cannot be deleted')]);
      const segment = await store.delete(caller.project, name);
      if (segment === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify(segment));
    };
  },
});
