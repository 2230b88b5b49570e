/**
 * Runs a benchmark's `main` and then its `cleanup` (its children stopped, its keys and files
 * removed) whatever happens: on success, on failure (exit status 1) and on SIGINT or SIGTERM
 * (exit status 130); cleanup runs once.
 */
export async function runBench(main: () => Promise<void>, cleanup: () => Promise<void>, log: (line: string) => void): Promise<never> {
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
