import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClickHouse } from './client.ts';
import { insertRows } from './insert.ts';

/** One numbered SQL file of ./migrations. */
export interface Migration {
  version: number;
  /** The file name without its number and `.sql` (`message_deliveries`). */
  name: string;
  /**
   * sha256 of the statements (comments left out): an applied migration whose statements changed is
   * refused (append-only); its comments may be reworded.
   */
  checksum: string;
  /** Checksums an earlier version of the engine recorded for this same migration. */
  earlier: string[];
  statements: string[];
}

/** The migrations on disk disagree with the ledger, or a file is misnamed. */
export class MigrationError extends Error {}

const dir = fileURLToPath(new URL('./migrations/', import.meta.url));
/**
 * Ledgers written before checksums left comments out hold the sha256 of the whole file: that of
 * the file as it is, or for these files, whose comments were reworded since, as it was.
 */
const formerFileChecksums: Record<number, string> = {
  2: 'd0358a55f958758348e24a92855b270ce47c90577f912a8a69f7a3162fb87e5f',
  3: 'f32ab39c79c1850ce5d66d431b019669aeaa99f8e7b8a1b13817ae58bd720541',
  4: '7c1346f94579deb0213fd8c2ca2cf702fce3e77e16d2d59174f08fa021fc6ba8',
  5: '404e0e70b2cca0c0ffed30f11510399eebb0057bf523ea5e8d843452f9be738f',
  6: '56e23bb5ad824b86306f73c5bf72f439c4c5b3b31ad4f1a9838f9d3016a8c0ef',
  7: '44d5fc2ac458a43a4e17e16b0708555e19f7ef0714c66bd80e6f9736f2c07e1e',
  8: '1ffb0f5b11b830755436f4941822df0fdd5e5fd6dc7631fb60edaab2b475ab66',
  9: '755e68239fc5a6019ba5f72762baa1778133a844196551e26c80dfab335626aa',
};
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const fileName = /^(\d{4})_([a-z0-9_]+)\.sql$/;
let loaded: Migration[] | undefined;

/**
 * The migrations of ./migrations in version order, read once per process: `NNNN_name.sql` from
 * 0001 without gaps, statements ending with `;` at the end of a line, `--` lines comments.
 */
export function loadMigrations(): Migration[] {
  if (loaded) return loaded;
  const migrations = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((file, i) => {
      const match = fileName.exec(file);
      if (!match?.[1] || !match[2]) throw new MigrationError(`migration file "${file}" is not named NNNN_name.sql`);
      const version = Number(match[1]);
      if (version !== i + 1) throw new MigrationError(`migration ${file}: expected version ${i + 1}`);
      const text = readFileSync(join(dir, file), 'utf8');
      const statements = text
        .split('\n')
        .filter((line) => !line.trimStart().startsWith('--'))
        .join('\n')
        .split(/;\s*$/m)
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const former = formerFileChecksums[version];
      return { version, name: match[2], checksum: sha256(statements.join(';\n')), earlier: [sha256(text), ...(former ? [former] : [])], statements };
    });
  loaded = migrations;
  return migrations;
}

/**
 * Applies the migrations the ledger (`schema_migrations`) does not list yet, in order, and returns
 * those this call applied. Safe to run again and from two runners at once, since every statement
 * is idempotent (docs/architecture.md, "Migrations").
 */
export async function migrate(ch: ClickHouse): Promise<Migration[]> {
  const migrations = loadMigrations();
  const [ledger] = migrations;
  if (!ledger) return [];
  // The ledger's own table must exist before it can be read; its DDL is idempotent.
  await run(ch, ledger);
  const applied = await appliedChecksums(ch);
  const done: Migration[] = [];
  for (const migration of migrations) {
    const checksum = applied.get(migration.version);
    if (checksum !== undefined) {
      if (checksum !== migration.checksum && !migration.earlier.includes(checksum)) {
        throw new MigrationError(`migration ${migration.version} (${migration.name}) changed after it was applied; add a new migration instead`);
      }
      continue;
    }
    await run(ch, migration);
    await insertRows(
      ch,
      'schema_migrations',
      [{ version: migration.version, name: migration.name, checksum: migration.checksum }],
      `schema_migrations:${migration.version}`,
    );
    done.push(migration);
  }
  return done;
}

/** Version -> checksum of every recorded migration. */
export async function appliedChecksums(ch: ClickHouse): Promise<Map<number, string>> {
  const result = await ch.query({
    query: 'SELECT version, checksum FROM schema_migrations FINAL ORDER BY version',
    format: 'JSONEachRow',
  });
  const rows = await result.json<{ version: number; checksum: string }>();
  return new Map(rows.map((r) => [Number(r.version), r.checksum]));
}

async function run(ch: ClickHouse, migration: Migration): Promise<void> {
  for (const query of migration.statements) await ch.command({ query });
}

/** A background rewrite of a table (a mutation, such as MATERIALIZE PROJECTION) not finished yet. */
export interface Rewrite {
  table: string;
  command: string;
  /** Parts of the table still to rewrite. */
  partsLeft: number;
  /** Why the last attempt failed ('' when none did); ClickHouse retries it. */
  failure: string;
}

/**
 * The unfinished rewrites of this database's tables, oldest first. Migrations start some (0006,
 * 0008, 0009 materialize projections over the rows already there) and return before they end:
 * meanwhile queries read the parts not yet rewritten without them, exact but slower.
 */
export async function unfinishedRewrites(ch: ClickHouse): Promise<Rewrite[]> {
  const result = await ch.query({
    query:
      'SELECT table, command, parts_to_do, latest_fail_reason FROM system.mutations WHERE database = currentDatabase() AND NOT is_done ORDER BY create_time, mutation_id',
    format: 'JSONEachRow',
  });
  const rows = await result.json<{ table: string; command: string; parts_to_do: string | number; latest_fail_reason: string }>();
  return rows.map((r) => ({ table: r.table, command: r.command, partsLeft: Number(r.parts_to_do), failure: r.latest_fail_reason }));
}
