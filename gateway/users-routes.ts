import type { TemplatedApp } from 'uWebSockets.js';
import { readUser } from '../engine/state/read-user.ts';
import { CallerError } from '../schemas/errors.ts';
import type { GatewayDeps } from './context.ts';
import { getRoute, pathParam, RouteMetric } from './http.ts';
import { valid } from './validation.ts';

export const usersRoutes = {
  user: { path: '/api/users/:external_id', allow: 'GET' },
} as const;

/** `GET /api/users/{external_id}` (API.md section 6, REST key): the applied state, 404 when unknown. */
export function registerUsersRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  app.get(
    usersRoutes.user.path,
    getRoute(deps, {
      metric: new RouteMetric(deps.metrics.requests, usersRoutes.user.path),
      restOnly: true,
      hasParam: true,
      handle: async (ex, caller, info) => {
        const id = valid(pathParam(info.param, 'external_id'));
        const user = await readUser(deps.redis, deps.topology, caller.project, id);
        if (user === null) throw new CallerError('not_found');
        ex.send(200, JSON.stringify(user));
      },
    }),
  );
}
