import uWS, { type TemplatedApp, type us_listen_socket } from 'uWebSockets.js';
import { answerCheck } from './answers.ts';
import type { GatewayDeps } from './deps.ts';
import { Exchange, RouteAnswers } from './exchange.ts';
import { httpHandler } from './pipeline.ts';
import { successAnswers, type Route, type Setup } from './route.ts';
import type { SocketChannel } from './socket.ts';
import { registerSocket } from './upgrade.ts';

/** A listening gateway server. */
export interface Server {
  /** The port it listens on (PORT 0 picks one). */
  readonly port: number;
  /** Stops listening, then closes every WebSocket (1001 going away); requests in flight finish. */
  close(): void;
}

/** Serves a route table on `host`:`port`; rejects when it cannot listen there. */
export async function serve(deps: GatewayDeps, routes: readonly Route[], host: string, port: number): Promise<Server> {
  const { app, channels } = buildApp(deps, routes);
  const socket = await listen(app, host, port);
  return {
    port: uWS.us_socket_local_port(socket),
    close: () => {
      uWS.us_listen_socket_close(socket);
      for (const channel of channels) channel.closeAll();
    },
  };
}

/**
 * The gateway's uWS app, derived from a route table: each route registered with its checks, a
 * CORS preflight answer (OPTIONS) on every path, 405 with Allow for a known path with another
 * method, 404 for everything else. uWS prefers a method handler over `any` on the same pattern, and
 * a more specific pattern over `/*`, so registration order does not matter.
 */
function buildApp(deps: GatewayDeps, routes: readonly Route[]): { app: TemplatedApp; channels: SocketChannel<unknown, unknown>[] } {
  const app = uWS.App();
  const setup: Setup = { deps, routes };
  const channels: SocketChannel<unknown, unknown>[] = [];
  for (const route of routes) {
    if (successAnswers(route).length === 0) throw new Error(`${route.method.toUpperCase()} ${route.path} declares no success answer`);
    const pattern = uwsPattern(route.path);
    const answers = new RouteAnswers(deps.metrics.requests, pattern, deps.config.CHECK_ANSWERS ? answerCheck(route, deps.failures) : null);
    if (route.kind === 'websocket') channels.push(registerSocket(app, pattern, route, setup, answers));
    else app[route.method === 'delete' ? 'del' : route.method](pattern, httpHandler(route, setup, answers));
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

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => (socket ? resolve(socket) : reject(new Error(`cannot listen on ${host}:${port}`))));
  });
}

/** The uWS pattern of an OpenAPI path (`{name}` becomes `:name`). */
function uwsPattern(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
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
