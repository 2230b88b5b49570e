import { checkNotificationBody } from '../../engine/notifications/body.ts';
import { createNotification } from '../../engine/notifications/create.ts';
import { NotificationBody, NotificationCreated, NotificationLimits } from '../../schemas/notifications.ts';
import { httpRoute } from '../server/route.ts';

export const notificationsCreate = httpRoute({
  method: 'post',
  path: '/api/notifications',
  auth: 'rest',
  summary: 'Send a notification now or at send_after; an idempotency_key makes a repeat answer the same',
  body: { schema: NotificationBody, limit: NotificationLimits.body, check: checkNotificationBody },
  answers: { 201: NotificationCreated },
  errors: ['idempotency_conflict'],
  handler:
    ({ deps }) =>
    async ({ ex, caller, body }) => {
      ex.send(201, JSON.stringify(await createNotification(deps, caller.project, body)));
    },
});
