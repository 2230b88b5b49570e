import type { TemplatedApp } from 'uWebSockets.js';
import { readUser } from '../engine/state/read-user.ts';
import type { GatewayDeps } from './context.ts';
import { getRoute, pathParam, RouteMetric } from './http.ts';

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
      handle: (ex, caller, info) => {
        const id = pathParam(info.param, 'external_id');
        if (!id.ok) return ex.fail('validation_failed', id.errors);
        readUser(deps.redis, deps.topology, caller.project, id.value).then(
          (user) => (user === null ? ex.fail('not_found') : ex.send(200, JSON.stringify(user))),
          (err: unknown) => {
            deps.tracker.redisFailed('user read', err);
            ex.unavailable();
          },
        );
      },
    }),
  );
}
