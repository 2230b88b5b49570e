import uWS from 'uWebSockets.js';
/** What the answer queue needs of a uWS WebSocket (STYLE.md 7: a plain object can stand in). */
export interface AnswerSocket {
  /** uWS: 1 sent, 0 sent but buffered (backpressure), 2 dropped (over maxBackpressure). */
  send(message: string, isBinary: boolean): number;
  getBufferedAmount(): number;
  cork(cb: () => void): unknown;
  end(code: number, reason: string): void;
}

/** One answer in arrival order; its text is null while the operation is still running. */
export interface Slot {
  text: string | null;
}

/**
 * Bytes uWS may hold for a socket before answers wait in the queue instead. Sending stops at this
 * mark, so uWS's own buffer never passes SEND_HIGH_WATER plus one answer plus its 16 KiB cork
 * buffer, well under MAX_BACKPRESSURE: a send or the close frame is never dropped.
 */
export const SEND_HIGH_WATER = 256 * 1024;
/** uWS maxBackpressure: past it send() drops the message (its default, 64 KiB, was silently hit). */
export const MAX_BACKPRESSURE = 4 * SEND_HIGH_WATER;

/**
 * The uWS settings every WebSocket channel of the gateway shares: sends past MAX_BACKPRESSURE are
 * the channel's to handle (never a close), idle sockets are pinged, and nothing is compressed.
 */
export const SOCKET_SETTINGS = {
  maxBackpressure: MAX_BACKPRESSURE,
  closeOnBackpressureLimit: 0,
  idleTimeout: 120,
  sendPingsAutomatically: true,
  compression: uWS.DISABLED,
} as const;
const DROPPED = 2;

/**
 * The answers of one WebSocket connection, sent in the order the frames arrived (STYLE.md 8:
 * bounded, pushed back by the peer). An answer stays here until uWS took it: while the one ahead
 * of it is still running, or while the client reads slower than we answer (uWS buffer at
 * SEND_HIGH_WATER; the `drain` handler calls flush again). So no answer is lost while the
 * connection is open, and `size` is the connection's work in flight for the channel's bound.
 */
export class AnswerQueue {
  private readonly slots: Slot[] = [];
  private closing: { code: number; reason: string } | null = null;
  private ended = false;
  private readyChars = 0;

  /** Answers not yet handed to uWS, running or ready. */
  get size(): number {
    return this.slots.length;
  }

  /** Characters of the ready answers held here (one answer listing many violations can be large). */
  get chars(): number {
    return this.readyChars;
  }

  /** True once a close was decided: no new frame is taken, the close follows the last answer. */
  get ending(): boolean {
    return this.closing !== null || this.ended;
  }

  /** True while the client does not read fast enough (uWS holds SEND_HIGH_WATER or more). */
  congested(ws: AnswerSocket): boolean {
    return !this.ended && ws.getBufferedAmount() >= SEND_HIGH_WATER;
  }

  /** A place for the answer of an operation that is still running; fill it with `fill`. */
  reserve(): Slot {
    const slot: Slot = { text: null };
    this.slots.push(slot);
    return slot;
  }

  /** An answer ready now: it goes out behind the answers still running ahead of it. */
  push(ws: AnswerSocket, text: string): void {
    this.slots.push({ text });
    this.readyChars += text.length;
    this.flush(ws);
  }

  fill(ws: AnswerSocket, slot: Slot, text: string): void {
    slot.text = text;
    this.readyChars += text.length;
    this.flush(ws);
  }

  /** Closes with `code` once every answer queued so far has been handed to uWS. */
  endAfter(ws: AnswerSocket, code: number, reason: string): void {
    if (this.ending) return;
    this.closing = { code, reason };
    this.flush(ws);
  }

  /** Closes now (graceful shutdown): what uWS can take is handed over first, the rest is lost. */
  endNow(ws: AnswerSocket, code: number, reason: string): void {
    this.flush(ws);
    if (this.ended) return;
    this.ended = true;
    ws.end(code, reason);
  }

  /** The socket closed (uWS `close`): it may not be touched any more, queued answers have no reader. */
  closed(): void {
    this.ended = true;
    this.slots.length = 0;
    this.readyChars = 0;
  }

  /** Sends the ready answers at the head, in one corked write, until uWS's buffer is at the mark. */
  flush(ws: AnswerSocket): void {
    if (this.ended) return;
    let sent = 0;
    if (this.slots[0]?.text != null) {
      ws.cork(() => {
        while (sent < this.slots.length) {
          const text = this.slots[sent]?.text;
          if (text == null || ws.getBufferedAmount() >= SEND_HIGH_WATER || ws.send(text, false) === DROPPED) break;
          this.readyChars -= text.length;
          sent++;
        }
      });
      this.slots.splice(0, sent);
    }
    if (this.closing !== null && this.slots.length === 0) {
      const { code, reason } = this.closing;
      this.ended = true;
      // The close frame queues behind the answers uWS still buffers (it drops it only past MAX_BACKPRESSURE).
      ws.end(code, reason);
    }
  }
}
