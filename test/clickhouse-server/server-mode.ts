import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startClickHouseStandIn } from './stand-in.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Files whose every test names its own unreachable CLICKHOUSE_URL: the same in both modes. */
const sameInBothModes = new Set(['test/query/unavailable.test.ts']);
/** tap's limit for a test file (package.json `tap.timeout`). */
const FILE_LIMIT_MS = 900_000;

/**
 * Runs the test files of `dir` (test/clickhouse, test/query, test/recorder or test/sql) again, in server
 * mode: every ClickHouse they open goes through CLICKHOUSE_URL to one stand-in of this process (a
 * database per test, see ./database.ts), so the engine's server path carries their traffic,
 * several processes included. One test file per directory, so tap runs them alongside others.
 */
export async function runInServerMode(dir: string): Promise<void> {
  const files = readdirSync(join(root, dir))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `${dir}/${f}`)
    .filter((file) => !sameInBothModes.has(file))
    .sort();
  // Each file keeps tap's per-file limit (package.json, 900 s); this file runs them all.
  t.setTimeout(files.length * FILE_LIMIT_MS);
  const standIn = await startClickHouseStandIn();
  t.teardown(() => standIn.close());
  for (const file of files) {
    await t.spawn(process.execPath, ['--import=tsx', file], { cwd: root, env: { ...process.env, TEST_CLICKHOUSE_URL: standIn.url }, timeout: FILE_LIMIT_MS }, `${file} in server mode`);
  }
}
