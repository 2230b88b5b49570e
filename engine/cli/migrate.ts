import type { Config } from '../../schemas/config.ts';
import { clickHouseLocation, createClickHouse, type ClickHouse } from '../clickhouse/client.ts';
import { migrate } from '../clickhouse/migrations.ts';
import type { Parsed } from './main.ts';
import { UsageError } from './usage.ts';

/**
 * `engine migrate`: applies the pending ClickHouse migrations and prints each one, or
 * "no migrations pending". A ClickHouse that cannot be reached or opened, or a refused migration,
 * is a message on stderr and exit status 1.
 */
export async function migrateCommand(config: Config, { positionals }: Parsed): Promise<number> {
  if (positionals.length > 0) throw new UsageError('migrate takes no arguments');
  let ch: ClickHouse | undefined;
  try {
    ch = createClickHouse(config);
    const applied = await migrate(ch);
    if (applied.length === 0) console.log('no migrations pending');
    for (const m of applied) console.log(`applied ${String(m.version).padStart(4, '0')}_${m.name}`);
    return 0;
  } catch (err) {
    console.error(`engine: migrate failed on ClickHouse (${clickHouseLocation(config)}): ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    await ch?.close();
  }
}
