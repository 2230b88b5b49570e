import type { Caller } from './auth.ts';

/**
 * Bytes the server holds unsent for one socket; past it send() drops the message and says so (2).
 * Channels stop sending well before it (gateway/ws/answer-queue.ts SEND_HIGH_WATER), so a send
 * or the close frame is never dropped unawares.
 */
export const MAX_BACKPRESSURE = 1024 * 1024;

/** What a channel may do with one of its open sockets; a uWS WebSocket fits, as does ./node/socket.ts's adapter of a `ws` one, and a test's plain object can stand in. */
export interface Socket<D> {
  /** What the channel's upgrade() opened the socket with. */
  getUserData(): D;
  /** 1 sent, 0 sent but buffered (backpressure), 2 dropped (over MAX_BACKPRESSURE). */
  send(message: string, isBinary: boolean): number;
  getBufferedAmount(): number;
  /** Runs `cb`, its sends written together. */
  cork(cb: () => void): unknown;
  end(code: number, reason: string): void;
}

/** An upgrade that passed its route's checks: the key (Authorization or subprotocol), the rate limit, the query. */
export interface UpgradeCall<Q, D> {
  caller: Caller;
  /** The key as sent: a channel that keeps the socket open looks it up again (a revocation applies). */
  key: string;
  query: Q;
  /** Answers 101 and opens the socket with `data`; nothing when the client went away meanwhile. */
  accept(data: D): void;
}

/**
 * What a WebSocket route serves. The server seam runs the upgrade through the route pipeline and
 * then hands the channel its sockets' events; it never touches a socket's data.
 */
export interface SocketChannel<Q, D> {
  /** Largest frame taken; the server fails the connection (1006, no answer) on a larger one. */
  readonly maxPayload: number;
  /** Opens the socket (call.accept) or not; what it throws or rejects with is answered by its kind, as a handler's. */
  upgrade(call: UpgradeCall<Q, D>): void | Promise<void>;
  /** Called within accept(). */
  open(ws: Socket<D>): void;
  message(ws: Socket<D>, message: ArrayBuffer, isBinary: boolean): void;
  /** The socket's unsent bytes went down (uWS `drain`; ./node/socket.ts after a buffered send went out). */
  drain(ws: Socket<D>): void;
  /** The socket closed: it may not be touched any more. */
  close(ws: Socket<D>): void;
  /** Closes every socket (graceful shutdown). */
  closeAll(): void;
}
