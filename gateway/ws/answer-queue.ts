import { MAX_BACKPRESSURE, type Socket } from '../server/socket.ts';

/** What the answer queue needs of a socket. */
export type AnswerSocket = Pick<Socket<unknown>, 'send' | 'getBufferedAmount' | 'cork' | 'end'>;

/** One answer in arrival order; its text is null while the operation is still running. */
export interface Slot {
  text: string | null;
}

/**
 * Bytes the server may hold for a socket before answers wait in the queue instead. Sending stops
 * at this mark, so the server's buffer never passes SEND_HIGH_WATER plus one answer plus uWS's
 * 16 KiB cork buffer, well under MAX_BACKPRESSURE: a send or the close frame is never dropped.
 */
export const SEND_HIGH_WATER = MAX_BACKPRESSURE / 4;
const DROPPED = 2;

/**
 * The answers of one WebSocket connection, sent in the order the frames arrived (bounded,
 * pushed back by the peer). An answer stays here until the server took it: while the one ahead
 * of it is still running, or while the client reads slower than we answer (server buffer at
 * SEND_HIGH_WATER; the `drain` handler calls flush again). So no answer is lost while the
 * connection is open, and `size` is the connection's work in flight for the channel's bound.
 */
export class AnswerQueue {
  private readonly slots: Slot[] = [];
  private closing: { code: number; reason: string } | null = null;
  private ended = false;
  private readyChars = 0;

  /** Answers not yet handed to the server, running or ready. */
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

  /** True while the client does not read fast enough (the server holds SEND_HIGH_WATER or more). */
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

  /** Closes with `code` once every answer queued so far has been handed to the server. */
  endAfter(ws: AnswerSocket, code: number, reason: string): void {
    if (this.ending) return;
    this.closing = { code, reason };
    this.flush(ws);
  }

  /** Closes now (graceful shutdown): what the server can take is handed over first, the rest is lost. */
  endNow(ws: AnswerSocket, code: number, reason: string): void {
    this.flush(ws);
    if (this.ended) return;
    this.ended = true;
    ws.end(code, reason);
  }

  /** The socket closed (`close`): it may not be touched any more, queued answers have no reader. */
  closed(): void {
    this.ended = true;
    this.slots.length = 0;
    this.readyChars = 0;
  }

  /** Sends the ready answers at the head, in one corked write, until the server's buffer is at the mark. */
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
      // The close frame queues behind the answers the server still buffers (it drops it only past MAX_BACKPRESSURE).
      ws.end(code, reason);
    }
  }
}
