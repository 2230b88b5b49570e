import { readView } from '../../engine/notifications/view.ts';
import { CallerError } from '../../schemas/errors.ts';
import { NotificationView } from '../../schemas/notifications.ts';
import { httpRoute } from '../server/route.ts';
import { NotificationParams } from './params.ts';

export const notificationsGet = httpRoute({
  method: 'get',
  path: '/api/notifications/{id}',
  auth: 'rest',
  summary: 'A notification: its status, recipients and counts',
  params: NotificationParams,
  answers: { 200: NotificationView },
  errors: ['not_found'],
  handler:
    ({ deps }) =>
    async ({ ex, caller, params }) => {
      const view = await readView(deps, caller.project, params.id);
      if (view === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify(view));
    },
});
