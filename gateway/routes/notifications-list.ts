import { listNotifications } from '../../engine/state/notifications/list.ts';
import { NotificationPageLimits, NotificationsPage, NotificationsQuery } from '../../schemas/notifications.ts';
import { isUnavailable } from '../../engine/infra/process/failure.ts';
import { httpRoute } from '../server/route.ts';

export const notificationsList = httpRoute({
  method: 'get',
  path: '/api/notifications',
  auth: 'rest',
  summary: "The project's notifications with their counts, newest first; follow next_cursor for the next page",
  query: NotificationsQuery,
  answers: { 200: NotificationsPage },
  handler: ({ deps }) => {
    // Without ClickHouse the view still answers from Redis (docs/api.md#reading-listing-and-cancelling).
    const views = { ...deps, clickhouseUnavailable: isUnavailable };
    return async ({ ex, caller, query }) => {
      const page = await listNotifications(views, caller.project, query.limit ?? NotificationPageLimits.default, query.cursor ?? null);
      ex.send(200, JSON.stringify({ notifications: page.notifications, next_cursor: page.next }));
    };
  },
});
