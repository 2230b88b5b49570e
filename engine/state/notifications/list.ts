import { errorItem } from '../../infra/validation/ajv-errors.ts';
import { CallerError } from '../../../schemas/errors.ts';
import type { NotificationView } from '../../../schemas/notifications.ts';
import type { NotificationDeps } from './create.ts';
import { Notifications } from './lifecycle.ts';
import { readViews } from './view.ts';

export interface NotificationsList {
  notifications: NotificationView[];
  /** The last id of the page when more follow, else null. */
  next: string | null;
}

/**
 * One page of `project`'s notifications, newest first (GET /api/notifications), after the one
 * named `after` (the previous page's last). A cursor the list does not hold is a 400.
 */
export async function listNotifications(deps: NotificationDeps, project: string, limit: number, after: string | null): Promise<NotificationsList> {
  const ids = await new Notifications(deps.redis, deps.topology).page(project, after, limit);
  if (ids === null) throw new CallerError('validation_failed', [errorItem('/cursor', 'must be a next_cursor of GET /api/notifications, unchanged')]);
  const page = ids.slice(0, limit);
  const views = await readViews(deps, project, page);
  return {
    notifications: views.filter((v): v is NotificationView => v !== null),
    next: ids.length > limit ? (page.at(-1) ?? null) : null,
  };
}
