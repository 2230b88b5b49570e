import { cancelNotification } from '../../engine/state/notifications/view.ts';
import { CallerError } from '../../schemas/errors.ts';
import { NotificationCanceled, NotificationQuery } from '../../schemas/notifications.ts';
import { isUnavailable } from '../../engine/infra/process/failure.ts';
import { httpRoute } from '../server/route.ts';
import { NotificationParams } from './params.ts';

export const notificationsCancel = httpRoute({
  method: 'delete',
  path: '/api/notifications/{id}',
  auth: 'rest',
  summary: 'Cancel a notification: no new attempt starts after the answer; answers as GET, with success: true',
  params: NotificationParams,
  query: NotificationQuery,
  answers: { 200: NotificationCanceled },
  errors: ['project_mismatch', 'not_found'],
  handler: ({ deps }) => {
    // Without ClickHouse the view still answers from Redis (docs/api.md#reading-listing-and-cancelling).
    const views = { ...deps, clickhouseUnavailable: isUnavailable };
    return async ({ ex, caller, params, query }) => {
      if (query.app_id !== undefined && query.app_id !== caller.project) throw new CallerError('project_mismatch');
      const view = await cancelNotification(views, caller.project, params.id);
      if (view === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify({ ...view, success: true }));
    };
  },
});
