import { rm } from 'node:fs/promises';
import { cleanupPrefix, REDIS_URL } from './redis.ts';

/**
 * Runs a benchmark's `main` and then its `cleanup` (its children stopped, its keys and files
 * removed) whatever happens: on success, on failure (exit status 1) and on SIGINT or SIGTERM
 * (exit status 130); cleanup runs once.
 */
export async function runBench(main: () => Promise<void>, cleanup: () => Promise<void>): Promise<never> {
  let cleaning: Promise<void> | null = null;
  // Every caller waits for the one cleanup: an interrupt fails `main`, whose own exit must not
  // cut the cleanup short.
  const cleanOnce = (): Promise<void> => (cleaning ??= cleanup());
  const interrupt = (): void => void cleanOnce().finally(() => process.exit(130));
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    await main();
  } catch (err) {
    log(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  } finally {
    await cleanOnce();
  }
  process.exit();
}

/** A benchmark's progress line, on stderr (stdout holds its table). */
export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/**
 * What a benchmark leaves behind, undone by `run` at its end, the last thing set up first: the
 * children stop before the keys they write are deleted and the folders they write in removed. A
 * step that fails is logged and the others still run.
 */
export class Teardown {
  private readonly steps: { what: string; undo: () => Promise<void> }[] = [];

  add(what: string, undo: () => Promise<void> | void): void {
    this.steps.push({ what, undo: async () => undo() });
  }

  /** Stops a child at the end; one that already stopped is left as it is. */
  child<T extends { name: string; stop(): Promise<void> }>(child: T): T {
    this.add(`stopping ${child.name}`, () => child.stop());
    return child;
  }

  connection<T extends { disconnect(): void }>(connection: T): T {
    this.add('disconnecting from Redis', () => connection.disconnect());
    return connection;
  }

  /** Deletes every key under the prefix at the end (cleanupPrefix). */
  keys(prefix: string, url = REDIS_URL): void {
    this.add(`cleanup of ${prefix}*`, () => cleanupPrefix(prefix, url));
  }

  folder(path: string): void {
    this.add(`removing ${path}`, () => rm(path, { recursive: true, force: true }));
  }

  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) await step.undo().catch((err: unknown) => log(`bench: ${step.what} failed: ${String(err)}`));
  }
}
