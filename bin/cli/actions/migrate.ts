import type { Config } from '../../../schemas/config.ts';
import { clickHouseLocation, openClickHouse, type ClickHouse } from '../../../engine/infra/clickhouse/client.ts';
import { EngineLockedError } from '../../../engine/infra/clickhouse/lock-holder.ts';
import { migrate, unfinishedRewrites } from '../../../engine/infra/clickhouse/migrations.ts';

/** How often the wait for background rewrites looks at them, ms. */
const REWRITE_POLL_MS = 1000;

/**
 * What `engine migrate` does: applies the pending ClickHouse migrations and prints each one, or
 * "no migrations pending", then waits for the background rewrites they started (projections
 * materialized over the rows already stored), with their progress on stderr. A ClickHouse that
 * cannot be reached or opened, a refused migration, or a rewrite that fails is a message on stderr
 * and exit status 1.
 */
export async function applyMigrations(config: Config): Promise<number> {
  let ch: ClickHouse | undefined;
  try {
    ch = await openClickHouse(config);
    const applied = await migrate(ch);
    if (applied.length === 0) console.log('no migrations pending');
    for (const m of applied) console.log(`applied ${String(m.version).padStart(4, '0')}_${m.name}`);
    return await awaitRewrites(ch);
  } catch (err) {
    if (err instanceof EngineLockedError) {
      console.error(`engine: migrate cannot open ClickHouse: ${err.message}`);
      console.error('(engine start applies the pending migrations itself when it opens ClickHouse)');
      return 1;
    }
    console.error(`engine: migrate failed on ClickHouse (${clickHouseLocation(config)}): ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    await ch?.close();
  }
}

/**
 * Waits until no rewrite is left, printing each change of their progress; 1 when one fails (it
 * stays queued: ClickHouse retries it, and queries stay exact meanwhile).
 */
async function awaitRewrites(ch: ClickHouse): Promise<number> {
  let shown = '';
  for (;;) {
    const rewrites = await unfinishedRewrites(ch);
    const failed = rewrites.find((r) => r.failure !== '');
    if (failed) {
      console.error(`engine: rewriting ${failed.table} failed: ${failed.command}: ${failed.failure}`);
      return 1;
    }
    if (rewrites.length === 0) {
      if (shown !== '') console.error('background rewrites done');
      return 0;
    }
    const progress = rewrites.map((r) => `rewriting ${r.table}: ${r.command}, ${r.partsLeft} part(s) left`).join('\n');
    if (progress !== shown) console.error(progress);
    shown = progress;
    await new Promise((resolve) => setTimeout(resolve, REWRITE_POLL_MS));
  }
}
