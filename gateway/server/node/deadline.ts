import type { Socket } from 'node:net';

/** How long a request may take to arrive whole, as uWS's HTTP idle timeout (docs/api.md#what-the-http-server-does-not-answer). */
export const IDLE_MS = 10_000;
/** A body restarts the timeout each time this much more of it arrived (16 KiB/s over IDLE_MS), as in uWS. */
const RESTART_BYTES = 16 * 1024 * (IDLE_MS / 1000);

/**
 * uWS's HTTP idle timeout on one node:http connection: it runs from the connection's opening (or
 * its previous answer) until a request's headers are in, again from there until its body is in
 * (restarted by each RESTART_BYTES of body), and not while the answer is pending. When it fires
 * the connection is destroyed without a byte sent.
 */
export class Deadline {
  private readonly timer: NodeJS.Timeout;
  private received = 0;
  /** Off while an answer is pending; a cleared timer cannot be refreshed, so the flag says it instead. */
  private running = true;

  constructor(socket: Socket) {
    this.timer = setTimeout(() => this.running && socket.destroy(), IDLE_MS).unref();
    socket.once('close', () => clearTimeout(this.timer));
  }

  /** Starts the timeout again. */
  arm(): void {
    this.running = true;
    this.received = 0;
    this.timer.refresh();
  }

  /** No timeout until the next arm(). */
  stop(): void {
    this.running = false;
  }

  /** `bytes` more of a body arrived. */
  body(bytes: number): void {
    this.received += bytes;
    if (this.received >= RESTART_BYTES) this.arm();
  }
}
