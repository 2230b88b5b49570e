import type { ClickHouse } from '../client.ts';
import type { AudienceRanges, CompiledFilters } from './compile.ts';

/** Most users one range of the mirror spans, in chunks: a sparse audience's ranges grow up to it. */
const MAX_SPAN_CHUNKS = 64;

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
  if (compiled.ranges !== undefined) return streamRanges(ch, compiled.params, compiled.ranges, onChunk, chunkSize, from);
  let after = from;
  let total = 0;
  for (;;) {
    const ids = await page(ch, compiled.query, { ...compiled.params, after, limit: chunkSize });
    const last = ids.at(-1);
    if (last === undefined) return total;
    total += ids.length;
    await onChunk(ids);
    if (ids.length < chunkSize) return total;
    after = last;
  }
}

/**
 * Reads an audience over the users mirror one range of the sort key at a time: a FINAL read
 * filtered on other columns than the key does not stop at its LIMIT, so a page open to the end
 * reads every user after it, and an audience read so cost its square (docs/architecture.md, "The
 * users mirror and segments"). A range spans as many users as the last one needed for a chunk of
 * matches, from one chunk to MAX_SPAN_CHUNKS; a range holding more than a chunk is read on from
 * its last match.
 */
async function streamRanges(
  ch: ClickHouse,
  params: Record<string, unknown>,
  ranges: AudienceRanges,
  onChunk: (ids: string[]) => Promise<void> | void,
  chunkSize: number,
  from: string,
): Promise<number> {
  let after = from;
  let span = chunkSize;
  let total = 0;
  for (;;) {
    const result = await ch.query({ query: ranges.end, query_params: { project: params['project'], after, span }, format: 'JSONEachRow' });
    const through = (await result.json<{ through: string }>())[0]?.through ?? '';
    if (through === '') return total;
    const ids = await page(ch, ranges.query, { ...params, after, through, limit: chunkSize });
    total += ids.length;
    if (ids.length > 0) await onChunk(ids);
    if (ids.length === chunkSize) {
      after = ids.at(-1) ?? through;
      span = chunkSize;
    } else {
      after = through;
      span = Math.min(MAX_SPAN_CHUNKS * chunkSize, Math.max(chunkSize, Math.floor((chunkSize * span) / Math.max(ids.length, 1))));
    }
  }
}

/** One page of the audience: its ids, in order. */
async function page(ch: ClickHouse, query: string, params: Record<string, unknown>): Promise<string[]> {
  const result = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
  return (await result.json<{ external_id: string }>()).map((r) => r.external_id);
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
