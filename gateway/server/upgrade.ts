import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_socket_context_t } from 'uWebSockets.js';
import { admitted, guarded, lookUpCaller } from './admission.ts';
import { Exchange, type RouteAnswers } from './exchange.ts';
import { requestCheck } from './request-check.ts';
import type { Setup, SocketRoute } from './route.ts';
import { upgradeKey } from './socket-key.ts';
import { MAX_BACKPRESSURE, type SocketChannel } from './socket.ts';

/**
 * The uWS settings of every WebSocket: sends past MAX_BACKPRESSURE are the channel's to handle
 * (send() says 2, the socket stays open), idle sockets are pinged, nothing is compressed.
 */
const SOCKET_SETTINGS = {
  maxBackpressure: MAX_BACKPRESSURE,
  closeOnBackpressureLimit: 0,
  idleTimeout: 120,
  sendPingsAutomatically: true,
  compression: uWS.DISABLED,
} as const;

/**
 * Registers a WebSocket route on `app`: its upgrade goes through the route pipeline, then its
 * channel gets the socket's events. A plain GET (no upgrade) on the path is 400: it needs one.
 * Returns the channel, for graceful shutdown.
 */
export function registerSocket(app: TemplatedApp, pattern: string, route: SocketRoute, setup: Setup, answers: RouteAnswers): SocketChannel<unknown, unknown> {
  const channel = route.channel(setup);
  app.ws<unknown>(pattern, {
    maxPayloadLength: channel.maxPayload,
    ...SOCKET_SETTINGS,
    upgrade: upgradeHandler(route, setup, answers, channel),
    open: (ws) => channel.open(ws),
    message: (ws, message, isBinary) => channel.message(ws, message, isBinary),
    drain: (ws) => channel.drain(ws),
    close: (ws) => channel.close(ws),
  });
  app.get(pattern, (res) =>
    new Exchange(res, answers, setup.deps.tracker).fail('validation_failed', [
      { code: 'validation_failed', message: 'This path needs a WebSocket upgrade (Upgrade: websocket).' },
    ]),
  );
  return channel;
}

/**
 * The upgrade, checked as an HTTP call of the route is (gateway/server/pipeline.ts): draining
 * (503), the key from `Authorization` or the subprotocol `bearer.<key>` (401, 403), the rate limit
 * (429: the upgrade is a call of its own), the query string (400); then the channel decides, at the
 * route's catch boundary, and opens the socket through call.accept.
 */
function upgradeHandler(
  route: SocketRoute,
  { deps }: Setup,
  answers: RouteAnswers,
  channel: SocketChannel<unknown, unknown>,
): (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => void {
  const check = requestCheck(route);
  return (res, req, context) => {
    const ex = new Exchange(res, answers, deps.tracker);
    // Read now: uWS requests live one call.
    const wsKey = req.getHeader('sec-websocket-key');
    const extensions = req.getHeader('sec-websocket-extensions');
    const { key, protocol } = upgradeKey(req.getHeader('authorization'), req.getHeader('sec-websocket-protocol'));
    const query = req.getQuery() ?? '';
    lookUpCaller(deps, ex, route.auth, key, (caller, sent) => {
      if (!admitted(ex, route.auth, caller)) return;
      guarded(deps, ex, answers.route, () => {
        const checked = check({ params: [], query }, undefined);
        if (!checked.ok) return ex.fail('validation_failed', checked.errors);
        // uWS calls the channel's open() within res.upgrade; a client that went away meanwhile never opens.
        const accept = (data: unknown): void => ex.upgrade((r) => r.upgrade(data, wsKey, protocol, extensions, context));
        return channel.upgrade({ caller, key: sent, query: checked.value.query, accept });
      });
    });
  };
}
