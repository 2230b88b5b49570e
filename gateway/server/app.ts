import uWS, { type TemplatedApp } from 'uWebSockets.js';
import { answerCheck } from './answers.ts';
import type { GatewayDeps } from './deps.ts';
import { Exchange, pipeline, RouteAnswers } from './exchange.ts';
import { requestCheck } from './request-check.ts';
import { paramNames, successAnswers, uwsPattern, type HttpRoute, type Route, type Setup, type SocketChannel } from './route.ts';
import { routes as table } from '../routes/table.ts';

/**
 * The gateway's uWS app, derived from a route table: each route registered with its checks, a
 * CORS preflight answer (OPTIONS) on every path, 405 with Allow for a known path with another
 * method, 404 for everything else. uWS prefers a method handler over `any` on the same pattern, and
 * a more specific pattern over `/*`, so registration order does not matter.
 */
export function buildApp(deps: GatewayDeps, routes: readonly Route[] = table): { app: TemplatedApp; channels: SocketChannel[] } {
  const app = uWS.App();
  const setup: Setup = { deps, routes };
  const answersOf = (route: Route): RouteAnswers =>
    new RouteAnswers(deps.metrics.requests, uwsPattern(route.path), deps.config.CHECK_ANSWERS ? answerCheck(route, deps.failures) : null);
  const channels: SocketChannel[] = [];
  for (const route of routes) {
    if (successAnswers(route).length === 0) throw new Error(`${route.method.toUpperCase()} ${route.path} declares no success answer`);
    const pattern = uwsPattern(route.path);
    if (route.kind === 'websocket') {
      const answers = answersOf(route);
      const channel = route.channel(deps, answers);
      channel.register(app, pattern);
      channels.push(channel);
      // A plain GET (no upgrade) on the WebSocket path: the channel needs an upgrade.
      app.get(pattern, (res) =>
        new Exchange(res, answers, deps.tracker).fail('validation_failed', [
          { code: 'validation_failed', message: 'This path needs a WebSocket upgrade (Upgrade: websocket).' },
        ]),
      );
      continue;
    }
    app[route.method === 'delete' ? 'del' : route.method](pattern, handlerOf(route, setup, answersOf(route)));
  }
  for (const [path, methods] of methodsByPath(routes)) {
    const allow = methods.join(', ');
    const answers = new RouteAnswers(deps.metrics.requests, path);
    app.options(path, (res) => new Exchange(res, answers, deps.tracker).preflight(allow));
    app.any(path, (res) => new Exchange(res, answers, deps.tracker).methodNotAllowed(allow));
  }
  const notFound = new RouteAnswers(deps.metrics.requests, '*');
  app.any('/*', (res) => new Exchange(res, notFound, deps.tracker).fail('not_found'));
  return { app, channels };
}

/** The uWS handler of an HTTP route: the request pipeline, the route's checks, then its handler. */
function handlerOf(route: HttpRoute, setup: Setup, answers: RouteAnswers): ReturnType<typeof pipeline> {
  const check = requestCheck(route);
  const handle = route.handler(setup);
  return pipeline(setup.deps, {
    answers,
    auth: route.auth,
    params: paramNames(route.path).length,
    limit: route.body?.limit ?? null,
    handle: (ex, caller, body, info) => {
      const checked = check(info, body);
      if (!checked.ok) return ex.fail('validation_failed', checked.errors);
      return handle({ ex, caller, ...checked.value, identityHash: info.identityHash });
    },
  });
}

const methodOrder = ['GET', 'POST', 'PUT', 'DELETE'];

/** Each uWS pattern with the methods declared on it, in the form of an Allow header. */
function methodsByPath(routes: readonly Route[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const route of routes) {
    const pattern = uwsPattern(route.path);
    out.set(pattern, [...(out.get(pattern) ?? []), route.method.toUpperCase()].sort((a, b) => methodOrder.indexOf(a) - methodOrder.indexOf(b)));
  }
  return out;
}
