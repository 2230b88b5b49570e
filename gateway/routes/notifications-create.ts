import { checkNotificationBody } from '../../engine/state/notifications/body.ts';
import { createNotification } from '../../engine/state/notifications/create.ts';
import { CallerError } from '../../schemas/errors.ts';
import { NotificationCreated, NotificationLimits } from '../../schemas/notifications.ts';
import { NotificationRequest } from '../../schemas/onesignal.ts';
import { httpRoute } from '../server/route.ts';

export const notificationsCreate = httpRoute({
  method: 'post',
  path: '/api/notifications',
  auth: 'rest',
  summary: 'Send a notification now or at send_after; an idempotency_key makes a repeat answer the same',
  body: { schema: NotificationRequest, limit: NotificationLimits.body, check: checkNotificationBody },
  answers: { 201: NotificationCreated },
  errors: ['project_mismatch', 'idempotency_conflict'],
  handler:
    ({ deps }) =>
    async ({ ex, caller, body }) => {
      // OneSignal's clients name the app; a key of another project is refused (docs/api.md#moving-from-onesignal).
      if (body.app_id !== null && body.app_id !== caller.project) throw new CallerError('project_mismatch');
      const localTime = body.localMinute === null ? null : { minute: body.localMinute, default_timezone: caller.timezone };
      ex.send(201, JSON.stringify(await createNotification(deps, caller.project, body.body, { ...body, localTime, frequencyCaps: caller.frequencyCaps })));
    },
});
