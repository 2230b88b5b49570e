import type { WebSocket } from 'ws';
import { MAX_BACKPRESSURE, type Socket, type SocketChannel } from '../socket.ts';

const SENT = 1;
const BUFFERED = 0;
const DROPPED = 2;

/**
 * A `ws` WebSocket as a channel's Socket, with uWS's semantics: send() says whether the message
 * went out, waits in the buffer, or was dropped past MAX_BACKPRESSURE (the socket stays open), and
 * the channel's drain() runs as the buffer empties after a send that had to wait.
 */
export class NodeSocket<D> implements Socket<D> {
  /** Something arrived since the last keep-alive tick. */
  alive = true;
  private open = true;
  private waiting = false;
  private readonly sent = (): void => {
    if (!this.waiting || !this.open) return;
    if (this.ws.bufferedAmount === 0) this.waiting = false;
    this.channel.drain(this);
  };

  constructor(
    private readonly ws: WebSocket,
    private readonly data: D,
    private readonly channel: SocketChannel<unknown, D>,
  ) {
    ws.binaryType = 'arraybuffer';
    const seen = (): void => void (this.alive = true);
    ws.on('pong', seen);
    ws.on('ping', seen);
    ws.on('message', (message: ArrayBuffer, isBinary: boolean) => {
      this.alive = true;
      channel.message(this, message, isBinary);
    });
    // The close event follows; what failed is the client's (a frame too large, bad UTF-8).
    ws.on('error', () => undefined);
    ws.once('close', () => {
      this.open = false;
      channel.close(this);
    });
  }

  getUserData(): D {
    return this.data;
  }

  send(message: string, isBinary: boolean): number {
    if (!this.open || this.ws.bufferedAmount > MAX_BACKPRESSURE) return DROPPED;
    this.ws.send(message, { binary: isBinary }, this.sent);
    if (this.ws.bufferedAmount === 0) return SENT;
    this.waiting = true;
    return BUFFERED;
  }

  getBufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  cork(cb: () => void): void {
    cb();
  }

  end(code: number, reason: string): void {
    if (this.open) this.ws.close(code, reason);
  }

  /** A keep-alive tick: a socket silent since the last one is dropped (1006), the others are pinged. */
  tick(): void {
    if (!this.open) return;
    if (!this.alive) return void this.ws.terminate();
    this.alive = false;
    this.ws.ping();
  }
}
