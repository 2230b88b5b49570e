import { answerCheck } from './answers.ts';
import type { GatewayDeps } from './deps.ts';
import { Exchange, RouteAnswers } from './exchange.ts';
import { httpHandler } from './pipeline.ts';
import { successAnswers, type Method, type Route, type Setup } from './route.ts';
import type { SocketChannel } from './socket.ts';
import { upgradeHandler, upgradeRequired, type UpgradeHandler } from './upgrade.ts';
import type { Handler } from './wire.ts';

/** The WebSocket route of a path: its channel and upgrade handler. */
export interface SocketPlan {
  channel: SocketChannel<unknown, unknown>;
  upgrade: UpgradeHandler;
}

/** Everything served on one path of the table. */
export interface PathPlan {
  /** The OpenAPI path, `{name}` for a parameter. */
  path: string;
  /** The route label of its metrics: the path with `:name` for a parameter. */
  label: string;
  /** Handlers by method; GET on a WebSocket path answers a request without an upgrade (400). */
  methods: Partial<Record<Method, Handler>>;
  socket: SocketPlan | null;
  /** CORS preflight (OPTIONS): the methods and headers a browser may use. */
  preflight: Handler;
  /** 405 with Allow, for any other method. */
  notAllowed: Handler;
}

/** What a server serves, derived from a route table once at start; both servers register or match it as it is. */
export interface Plan {
  paths: PathPlan[];
  /** 404 for every path the table does not have. */
  notFound: Handler;
  /** Every WebSocket channel, for graceful shutdown. */
  channels: SocketChannel<unknown, unknown>[];
}

const methodOrder = ['GET', 'POST', 'PUT', 'DELETE'];

/**
 * The plan of a route table: each route with its checks, a CORS preflight answer (OPTIONS) on every
 * path, 405 with Allow for a known path with another method, 404 for everything else.
 */
export function buildPlan(deps: GatewayDeps, routes: readonly Route[]): Plan {
  const setup: Setup = { deps, routes };
  const byPath = new Map<string, PathPlan>();
  const channels: SocketChannel<unknown, unknown>[] = [];
  const planOf = (path: string): PathPlan => {
    let plan = byPath.get(path);
    if (plan === undefined) {
      plan = { path, label: labelOf(path), methods: {}, socket: null, preflight: () => undefined, notAllowed: () => undefined };
      byPath.set(path, plan);
    }
    return plan;
  };
  for (const route of routes) {
    if (successAnswers(route).length === 0) throw new Error(`${route.method.toUpperCase()} ${route.path} declares no success answer`);
    const plan = planOf(route.path);
    const answers = new RouteAnswers(deps.metrics.requests, plan.label, deps.config.CHECK_ANSWERS ? answerCheck(route, deps.failures) : null);
    if (route.kind === 'websocket') {
      const channel = route.channel(setup);
      channels.push(channel);
      plan.socket = { channel, upgrade: upgradeHandler(route, setup, answers, channel) };
      plan.methods.get = upgradeRequired(answers, deps.tracker);
    } else plan.methods[route.method] = httpHandler(route, setup, answers);
  }
  for (const plan of byPath.values()) {
    const allow = Object.keys(plan.methods)
      .map((m) => m.toUpperCase())
      .sort((a, b) => methodOrder.indexOf(a) - methodOrder.indexOf(b))
      .join(', ');
    const answers = new RouteAnswers(deps.metrics.requests, plan.label);
    plan.preflight = (reply) => new Exchange(reply, answers, deps.tracker).preflight(allow);
    plan.notAllowed = (reply) => new Exchange(reply, answers, deps.tracker).methodNotAllowed(allow);
  }
  const notFound = new RouteAnswers(deps.metrics.requests, '*');
  return { paths: [...byPath.values()], notFound: (reply) => new Exchange(reply, notFound, deps.tracker).fail('not_found'), channels };
}

/** `{name}` becomes `:name`, as uWS patterns write it. */
function labelOf(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}
