import uWS, { type TemplatedApp } from 'uWebSockets.js';
import { consentRoutes, registerConsentRoutes } from './consent-routes.ts';
import type { GatewayDeps } from './context.ts';
import { deliveriesRoutes, registerDeliveriesRoutes } from './deliveries-routes.ts';
import { eventsRoutes, registerEventsRoutes } from './events-routes.ts';
import { Exchange, RouteMetric } from './http.ts';
import { opsRoutes, registerOpsRoutes } from './ops-routes.ts';
import { registerSdkRoutes, sdkRoutes } from './sdk-routes.ts';
import { registerSegmentsRoutes, segmentsRoutes } from './segments-routes.ts';
import { registerUsersRoutes, usersRoutes } from './users-routes.ts';
import { SdkSocketChannel, wsRoute } from './websocket.ts';

/** Every known path with its allowed methods: the 405 table (API.md section 2). */
const knownPaths = [
  ...Object.values(sdkRoutes),
  ...Object.values(consentRoutes),
  ...Object.values(usersRoutes),
  ...Object.values(deliveriesRoutes),
  ...Object.values(eventsRoutes),
  ...Object.values(segmentsRoutes),
  ...Object.values(opsRoutes),
  wsRoute,
];

/**
 * The gateway's uWS app: the route groups, a CORS preflight answer (OPTIONS) on every known path,
 * then 405 for a known path with another method, then 404
 * for everything else. uWS prefers a method handler over `any` on the same pattern, and a more
 * specific pattern over `/*`, so registration order does not matter.
 */
export function buildApp(deps: GatewayDeps): { app: TemplatedApp; channel: SdkSocketChannel } {
  const app = uWS.App();
  registerSdkRoutes(app, deps);
  registerConsentRoutes(app, deps);
  registerUsersRoutes(app, deps);
  registerDeliveriesRoutes(app, deps);
  registerEventsRoutes(app, deps);
  registerSegmentsRoutes(app, deps);
  registerOpsRoutes(app, deps);
  const channel = new SdkSocketChannel(deps);
  channel.register(app);
  // A plain GET (no upgrade) on the WebSocket path: the channel needs an upgrade.
  const wsMetric = new RouteMetric(deps.metrics.requests, wsRoute.path);
  app.get(wsRoute.path, (res) =>
    new Exchange(res, wsMetric, deps.tracker).fail('validation_failed', [
      { code: 'validation_failed', message: 'This path needs a WebSocket upgrade (Upgrade: websocket).' },
    ]),
  );
  for (const { path, allow } of knownPaths) {
    const metric = new RouteMetric(deps.metrics.requests, path);
    app.options(path, (res) => new Exchange(res, metric, deps.tracker).preflight(allow));
    app.any(path, (res) => new Exchange(res, metric, deps.tracker).methodNotAllowed(allow));
  }
  const notFound = new RouteMetric(deps.metrics.requests, '*');
  app.any('/*', (res) => new Exchange(res, notFound, deps.tracker).fail('not_found'));
  return { app, channel };
}
