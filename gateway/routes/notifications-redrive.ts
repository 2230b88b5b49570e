import { redriveNotification } from '../../engine/state/notifications/redrive.ts';
import { CallerError } from '../../schemas/errors.ts';
import { NotificationCreated } from '../../schemas/notifications.ts';
import { RedriveBody } from '../../schemas/redrive.ts';
import { httpRoute } from '../server/route.ts';
import { NotificationParams } from './params.ts';

export const notificationsRedrive = httpRoute({
  method: 'post',
  path: '/api/notifications/{id}/redrive',
  auth: 'rest',
  summary: "Send a notification's content again to the users whose last attempt matches the filters",
  params: NotificationParams,
  body: { schema: RedriveBody, limit: 4096 },
  answers: { 201: NotificationCreated },
  errors: ['not_found', 'idempotency_conflict'],
  handler:
    ({ deps }) =>
    async ({ ex, caller, params, body }) => {
      const created = await redriveNotification(deps, caller.project, params.id, body, caller.frequencyCaps);
      if (created === null) throw new CallerError('not_found');
      ex.send(201, JSON.stringify(created));
    },
});
