import type { ClickHouse } from '../client.ts';
import type { CompiledFilters } from './compile.ts';

/**
 * Reads the audience of compiled filters in chunks of at most `chunkSize` external_ids, in
 * external_id order from after `from` (a resumed read), awaiting `onChunk` before reading on; returns how many ids were passed on.
 * Each chunk is its own query because the embedded engine buffers whole results
 * (docs/architecture.md, "The users mirror and segments").
 */
export async function streamAudience(
  ch: ClickHouse,
  compiled: CompiledFilters,
  onChunk: (ids: string[]) => Promise<void> | void,
  chunkSize = 10_000,
  from = '',
): Promise<number> {
  if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new RangeError(`chunkSize must be a positive integer, got ${chunkSize}`);
  let after = from;
  let total = 0;
  for (;;) {
    const result = await ch.query({
      query: compiled.query,
      query_params: { ...compiled.params, after, limit: chunkSize },
      format: 'JSONEachRow',
    });
    const ids = (await result.json<{ external_id: string }>()).map((r) => r.external_id);
    const last = ids.at(-1);
    if (last === undefined) return total;
    total += ids.length;
    await onChunk(ids);
    if (ids.length < chunkSize) return total;
    after = last;
  }
}

/** How many users the compiled filters match now. */
export async function countAudience(ch: ClickHouse, compiled: CompiledFilters): Promise<number> {
  const result = await ch.query({ query: compiled.count, query_params: compiled.params, format: 'JSONEachRow' });
  const [row] = await result.json<{ count: string | number }>();
  return Number(row?.count ?? 0);
}

/** Which of `ids` the compiled filters match now. */
export async function matchingOf(ch: ClickHouse, compiled: CompiledFilters, ids: readonly string[], after: string): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const result = await ch.query({
    query: `SELECT external_id FROM (${compiled.query}) WHERE has({ids:Array(String)}, external_id)`,
    query_params: { ...compiled.params, after, limit: 4_294_967_295, ids },
    format: 'JSONEachRow',
  });
  return new Set((await result.json<{ external_id: string }>()).map((r) => r.external_id));
}
