import { setImmediate } from 'node:timers/promises';

/**
 * Items handled between two turns of the event loop: under a millisecond of a round's rows. 256
 * held the loop 3 to 5 ms a slice, and the apply lag's p99 showed it (docs/performance.md).
 */
export const SLICE = 64;

/**
 * Calls `each` on every item, letting the event loop turn after every SLICE items: a recorder
 * round turns thousands of entries into rows, and the gateway and the apply rounds share the
 * thread.
 */
export async function inSlices<T>(items: readonly T[], each: (item: T) => void): Promise<void> {
  for (let from = 0; from < items.length; from += SLICE) {
    if (from > 0) await setImmediate();
    const end = Math.min(items.length, from + SLICE);
    for (let i = from; i < end; i++) each(items[i] as T);
  }
}
