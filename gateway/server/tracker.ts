/** In-flight requests and the draining switch of graceful shutdown (docs/configuration.md, "Stopping"). */
export class Tracker {
  inflight = 0;
  draining = false;
  private idle: (() => void) | null = null;

  start(): void {
    this.inflight++;
  }

  done(): void {
    this.inflight--;
    if (this.inflight === 0 && this.idle) this.idle();
  }

  /** Resolves when no request is in flight, or after `ms` at the latest. */
  whenIdle(ms: number): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
