import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** How often the event loop's utilisation is read again, ms. */
const WINDOW_MS = 250;
/** Past this share of busy time the process is short of CPU; below CALM it no longer is. */
const BUSY = 0.9;
const CALM = 0.75;

/**
 * Whether this process's event loop is short of time: busy more than 90% of the last quarter
 * second, until it falls under 75% (the gap keeps a batching that relieves it from turning off at
 * once). Batching trades latency for CPU; a reader asks this before paying latency for it.
 */
export class BusyGauge {
  private last: EventLoopUtilization = performance.eventLoopUtilization();
  private at = performance.now();
  private busy = false;

  get short(): boolean {
    const now = performance.now();
    if (now - this.at >= WINDOW_MS) {
      const current = performance.eventLoopUtilization();
      const share = performance.eventLoopUtilization(current, this.last).utilization;
      this.last = current;
      this.at = now;
      this.busy = this.busy ? share >= CALM : share >= BUSY;
    }
    return this.busy;
  }
}
