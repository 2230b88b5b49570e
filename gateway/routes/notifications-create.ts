import { checkNotificationBody } from '../../engine/state/notifications/body.ts';
import { createNotification } from '../../engine/state/notifications/create.ts';
import { withTemplate } from '../../engine/state/notifications/template.ts';
import { TemplateStore } from '../../engine/state/templates/store.ts';
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
  handler: ({ deps }) => {
    const templates = new TemplateStore(deps.redis, deps.topology);
    return async ({ ex, caller, body }) => {
      // OneSignal's clients name the app; a key of another project is refused (docs/api.md#moving-from-onesignal).
      if (body.app_id !== null && body.app_id !== caller.project) throw new CallerError('project_mismatch');
      const localTime = body.localMinute === null ? null : { minute: body.localMinute, default_timezone: caller.timezone };
      const notification = await withTemplate(templates, caller.project, body.body, body.template_id);
      ex.send(201, JSON.stringify(await createNotification(deps, caller.project, notification, { ...body, localTime, frequencyCaps: caller.frequencyCaps })));
    };
  },
});
