import uWS, { type TemplatedApp } from 'uWebSockets.js';
import type { PathPlan, Plan } from '../plan.ts';
import { MAX_BACKPRESSURE } from '../socket.ts';
import type { Listening } from '../wire.ts';
import { UwsReply, UwsRequest } from './wire.ts';

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

/** Serves `plan` with uWebSockets.js on `host`:`port`; rejects when it cannot listen there. */
export function listenUws(plan: Plan, host: string, port: number): Promise<Listening> {
  const app = uWS.App();
  for (const path of plan.paths) register(app, path);
  app.any('/*', (res, req) => plan.notFound(new UwsReply(res), new UwsRequest(req)));
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`));
      resolve({ port: uWS.us_socket_local_port(socket), close: () => uWS.us_listen_socket_close(socket) });
    });
  });
}

/**
 * One path of the plan. uWS prefers a method handler over `any` on the same pattern, `ws` over
 * `get` for an upgrade, and a more specific pattern over `/*`, so registration order does not matter.
 */
function register(app: TemplatedApp, path: PathPlan): void {
  const pattern = path.label;
  for (const [method, handler] of Object.entries(path.methods)) {
    app[method === 'delete' ? 'del' : (method as 'get' | 'post' | 'put')](pattern, (res, req) => handler(new UwsReply(res), new UwsRequest(req)));
  }
  app.options(pattern, (res, req) => path.preflight(new UwsReply(res), new UwsRequest(req)));
  app.any(pattern, (res, req) => path.notAllowed(new UwsReply(res), new UwsRequest(req)));
  const socket = path.socket;
  if (socket === null) return;
  const { channel } = socket;
  app.ws<unknown>(pattern, {
    maxPayloadLength: channel.maxPayload,
    ...SOCKET_SETTINGS,
    upgrade: (res, req, context) => {
      // Read now: uWS requests live one call.
      const wsKey = req.getHeader('sec-websocket-key');
      const extensions = req.getHeader('sec-websocket-extensions');
      socket.upgrade(new UwsReply(res), new UwsRequest(req), (data, protocol) => res.upgrade(data, wsKey, protocol, extensions, context));
    },
    open: (ws) => channel.open(ws),
    message: (ws, message, isBinary) => channel.message(ws, message, isBinary),
    drain: (ws) => channel.drain(ws),
    close: (ws) => channel.close(ws),
  });
}
