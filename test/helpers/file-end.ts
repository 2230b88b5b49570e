import { relative } from 'node:path';
import type { Test } from 'tap';

/**
 * Ends the file's process once its last test has ended, even when something it started still
 * holds the event loop open: what holds it is printed to standard error by kind (a leak to find),
 * and the process exits 10 s later with the status its tests gave. Without this such a file runs
 * on to tap's limit and counts as timed out, every assertion in it passed
 * (docs/reliability.md#running-the-tests).
 */
export function endWhenDone(t: Test): void {
  t.teardown(() => {
    setTimeout(() => {
      const file = relative(process.cwd(), process.argv[1] ?? '');
      process.stderr.write(`${file}: still held open after its last test by ${JSON.stringify(process.getActiveResourcesInfo())}\n`);
      process.exit();
    }, 10_000).unref();
  });
}
