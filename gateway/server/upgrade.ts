import { admitted, guarded, lookUpCaller } from './admission.ts';
import { Exchange, type RouteAnswers } from './exchange.ts';
import { requestCheck } from './request-check.ts';
import type { Setup, SocketRoute } from './route.ts';
import { upgradeKey } from './socket-key.ts';
import type { SocketChannel } from './socket.ts';
import type { Tracker } from './tracker.ts';
import type { Handler, Reply, Request } from './wire.ts';

/** Answers 101 on the server and opens the socket with `data`, echoing `protocol`; the channel's open() runs within it. */
export type OpenSocket = (data: unknown, protocol: string) => void;

/** The handler of a WebSocket upgrade, on either server. */
export type UpgradeHandler = (reply: Reply, req: Request, open: OpenSocket) => void;

/**
 * The upgrade, checked as an HTTP call of the route is (gateway/server/pipeline.ts): draining
 * (503), the key from `Authorization` or the subprotocol `bearer.<key>` (401, 403), the rate limit
 * (429: the upgrade is a call of its own), the query string (400); then the channel decides, at the
 * route's catch boundary, and opens the socket through call.accept.
 */
export function upgradeHandler(route: SocketRoute, { deps }: Setup, answers: RouteAnswers, channel: SocketChannel<unknown, unknown>): UpgradeHandler {
  const check = requestCheck(route);
  return (reply, req, open) => {
    const ex = new Exchange(reply, answers, deps.tracker);
    const { key, protocol } = upgradeKey(req.header('authorization'), req.header('sec-websocket-protocol'));
    const query = req.query();
    lookUpCaller(deps, ex, route.auth, key, (caller, sent) => {
      if (!admitted(ex, route.auth, caller)) return;
      guarded(deps, ex, answers.route, () => {
        const checked = check({ params: [], query }, undefined);
        if (!checked.ok) return ex.fail('validation_failed', checked.errors);
        // A client that went away meanwhile never opens.
        const accept = (data: unknown): void => ex.upgrade(() => open(data, protocol));
        return channel.upgrade({ caller, key: sent, query: checked.value.query, accept });
      });
    });
  };
}

/** A plain GET (no upgrade) on a WebSocket path: 400, it needs one. */
export function upgradeRequired(answers: RouteAnswers, tracker: Tracker): Handler {
  return (reply) =>
    new Exchange(reply, answers, tracker).fail('validation_failed', [{ code: 'validation_failed', message: 'This path needs a WebSocket upgrade (Upgrade: websocket).' }]);
}
