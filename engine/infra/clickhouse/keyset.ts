import type { ClickHouse } from './client.ts';
import type { QueryFile } from './query-file.ts';

/** What a keyset page read needs: its query, the fixed parameters, the filters set and the position after which it starts. */
export interface KeysetRead<F> {
  query: QueryFile;
  params: Record<string, string | number>;
  filter: F;
  /** The filters, each the name of its parameter and of the switch of its WHERE line in the query. */
  filterNames: readonly (keyof F & string)[];
  /** The previous page's last row as the query's `after_…` parameters; null for the first page. */
  after: Record<string, string | number> | null;
  limit: number;
}

/**
 * One keyset page (docs/architecture.md, "Queries"): at most `limit` rows and whether more follow,
 * read as one row more than the page.
 */
export async function keysetPage<Row, F extends { [K in keyof F]?: string | number }>(ch: ClickHouse, read: KeysetRead<F>): Promise<{ rows: Row[]; more: boolean }> {
  const switches: string[] = [];
  const params: Record<string, string | number> = { ...read.params, limit: read.limit + 1 };
  for (const name of read.filterNames) {
    const value = read.filter[name];
    if (value === undefined) continue;
    switches.push(name);
    params[name] = value;
  }
  if (read.after !== null) {
    switches.push('after');
    for (const [name, value] of Object.entries(read.after)) params[`after_${name}`] = value;
  }
  const result = await ch.query({ query: read.query.text(switches), query_params: params, format: 'JSONEachRow' });
  const rows = await result.json<Row>();
  return rows.length > read.limit ? { rows: rows.slice(0, read.limit), more: true } : { rows, more: false };
}
