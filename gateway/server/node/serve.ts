import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Plan, SocketPlan } from '../plan.ts';
import type { Method } from '../route.ts';
import type { Handler, Listening } from '../wire.ts';
import { Deadline } from './deadline.ts';
import { Router, type Match } from './router.ts';
import { NodeSocket } from './socket.ts';
import { NodeReply, NodeRequest, RawReply } from './wire.ts';

/** Header lines (Host included) past which a request is left unanswered until the idle timeout closes it, as uWS does. */
const MAX_HEADER_LINES = 48;
/** Request line and headers in all, as uWS takes them (measured: it closes the connection past about 113 KiB). */
const MAX_HEAD_BYTES = 113 * 1024;
/** A WebSocket silent for one tick is pinged, for two is dropped: uWS's idle timeout of 120 s with automatic pings. */
const KEEPALIVE_TICK_MS = 60_000;

/**
 * Serves `plan` with node:http (and `ws` for WebSocket routes) on `host`:`port`, with uWS's limits
 * where node's differ (docs/api.md#what-the-http-server-does-not-answer): the idle timeout
 * (./deadline.ts), the header line cap, no compression, the same backpressure (./socket.ts).
 */
export function listenNode(plan: Plan, host: string, port: number): Promise<Listening> {
  const router = new Router(plan.paths);
  const deadlines = new WeakMap<Socket, Deadline>();
  const sockets = new Set<NodeSocket<unknown>>();
  const upgrades = new Upgrades(sockets);
  const server = createServer({ maxHeaderSize: MAX_HEAD_BYTES });
  // Counted in the request handler: past node's own count it refuses at once, uWS lets the timeout close.
  server.maxHeadersCount = 0;
  // The Deadline closes idle connections instead.
  server.keepAliveTimeout = 0;
  server.on('connection', (socket: Socket) => deadlines.set(socket, new Deadline(socket)));
  // Never a byte, as uWS: a head too large is closed at once, another unparsable request is left
  // to the deadline; a socket that failed is closed.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'HPE_HEADER_OVERFLOW' || !err.code?.startsWith('HPE_')) socket.destroy();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // Unanswered: the connection's deadline runs on from its opening and closes it.
    if (req.rawHeaders.length > MAX_HEADER_LINES * 2) return;
    const deadline = deadlines.get(req.socket);
    if (deadline !== undefined) {
      deadline.arm();
      req.on('data', (chunk: Buffer) => deadline.body(chunk.byteLength));
      req.once('end', () => {
        if (!res.writableFinished) deadline.stop();
      });
      res.once('finish', () => deadline.arm());
    }
    const { match, request } = route(router, req);
    dispatch(plan, match, req.method ?? '')(new NodeReply(req, res), request);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    deadlines.get(req.socket)?.stop();
    socket.on('error', () => socket.destroy());
    const { match, request } = route(router, req);
    const reply = new RawReply(socket);
    const target = match?.plan.socket;
    if (target == null || req.method !== 'GET' || req.headers.upgrade?.toLowerCase() !== 'websocket') return dispatch(plan, match, req.method ?? '')(reply, request);
    target.upgrade(reply, request, (data, protocol) => upgrades.open(target, req, socket, head, data, protocol));
  });
  const keepAlive = setInterval(() => sockets.forEach((s) => s.tick()), KEEPALIVE_TICK_MS).unref();
  return new Promise((resolve, reject) => {
    server.once('error', () => reject(new Error(`cannot listen on ${host}:${port}`)));
    server.listen(port, host, () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : port,
        close: () => {
          clearInterval(keepAlive);
          server.close();
          server.closeIdleConnections();
        },
      });
    });
  });
}

/** The plan's path a request is for, and the request as the pipeline reads it. */
function route(router: Router, req: IncomingMessage): { match: Match | null; request: NodeRequest } {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const match = router.match(q < 0 ? url : url.slice(0, q));
  return { match, request: new NodeRequest(req, match?.params ?? [], q < 0 ? '' : url.slice(q + 1)) };
}

const methods: ReadonlySet<string> = new Set<Method>(['get', 'post', 'put', 'delete']);

/** The handler of a request's method on its path: preflight, the route, 405, or 404 for no path. */
function dispatch(plan: Plan, match: Match | null, method: string): Handler {
  if (match === null) return plan.notFound;
  const m = method.toLowerCase();
  if (m === 'options') return match.plan.preflight;
  return (methods.has(m) ? match.plan.methods[m as Method] : undefined) ?? match.plan.notAllowed;
}

/** The `ws` servers of the plan's WebSocket paths, and the subprotocol each accepted upgrade echoes. */
class Upgrades {
  private readonly servers = new Map<SocketPlan, WebSocketServer>();
  private readonly protocols = new WeakMap<IncomingMessage, string>();

  constructor(private readonly sockets: Set<NodeSocket<unknown>>) {}

  open(target: SocketPlan, req: IncomingMessage, socket: Duplex, head: Buffer, data: unknown, protocol: string): void {
    if (protocol !== '') this.protocols.set(req, protocol);
    this.serverOf(target).handleUpgrade(req, socket, head, (ws) => {
      const open = new NodeSocket(ws, data, target.channel);
      this.sockets.add(open);
      ws.once('close', () => this.sockets.delete(open));
      target.channel.open(open);
    });
  }

  private serverOf(target: SocketPlan): WebSocketServer {
    let wss = this.servers.get(target);
    if (wss === undefined) {
      wss = new WebSocketServer({
        noServer: true,
        clientTracking: false,
        perMessageDeflate: false,
        maxPayload: target.channel.maxPayload,
        handleProtocols: (_offered, req) => this.protocols.get(req) ?? false,
      });
      this.servers.set(target, wss);
    }
    return wss;
  }
}
