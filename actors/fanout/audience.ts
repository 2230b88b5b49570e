import type { ClickHouse } from '../../engine/clickhouse/client.ts';
import { compileFilters, type CompiledFilters } from '../../engine/clickhouse/filters/compile.ts';
import { matchingOf, streamAudience } from '../../engine/clickhouse/filters/stream.ts';
import { allFiltersOf } from '../../engine/notifications/audience.ts';
import type { SegmentStore } from '../../engine/segments/store.ts';
import type { FilterEntry } from '../../schemas/filters.ts';
import type { NotificationSpec } from '../../schemas/notifications.ts';
import { ALL_SEGMENT } from '../../schemas/segments.ts';

/** Users per fan-out chunk: one appendJobs call per partition and one progress write per chunk. */
export const CHUNK = 1000;
/**
 * Users per page of a segment or filter audience: each page is one ClickHouse query whose cost is
 * mostly fixed (FINAL over the users mirror), so pages are larger than id chunks.
 */
export const PAGE = 10_000;

export interface AudienceSources {
  clickhouse(): Promise<ClickHouse>;
  segments: Pick<SegmentStore, 'get'>;
}

/**
 * Walks a notification's audience in external_id order from after `cursor`, a chunk at a time,
 * awaiting `onChunk` before reading on, so a broadcast to millions never holds its audience.
 */
export async function walkAudience(spec: NotificationSpec, cursor: string, sources: AudienceSources, onChunk: (ids: string[]) => Promise<void>): Promise<void> {
  if (spec.external_ids !== null) {
    const ids = [...new Set(spec.external_ids)].sort().filter((id) => id > cursor);
    for (let i = 0; i < ids.length; i += CHUNK) await onChunk(ids.slice(i, i + CHUNK));
    return;
  }
  const included = spec.filters !== null ? compileFilters(spec.project, spec.filters, spec.created_at) : await segmentsAudience(spec, spec.included_segments ?? [], sources);
  if (included === null) return;
  const excluded = await segmentsAudience(spec, spec.excluded_segments, sources);
  const ch = await sources.clickhouse();
  let last = cursor;
  await streamAudience(
    ch,
    included,
    async (ids) => {
      const out = excluded === null ? new Set<string>() : await matchingOf(ch, excluded, ids, last);
      last = ids.at(-1) ?? last;
      await onChunk(ids.filter((id) => !out.has(id)));
    },
    PAGE,
    cursor,
  );
}

/**
 * The union of segments as one compiled filter list: their lists joined by OR (AND binds tighter,
 * so this is exact); `All` stands for everyone with a live subscription of the notification's
 * channel, as the accept counted it (engine/notifications/audience.ts). Null for none, or when
 * every segment named has been deleted since the accept.
 */
async function segmentsAudience(spec: NotificationSpec, names: readonly string[], sources: AudienceSources): Promise<CompiledFilters | null> {
  if (names.length === 0) return null;
  const lists: FilterEntry[][] = [];
  for (const name of names) {
    if (name === ALL_SEGMENT) {
      lists.push(allFiltersOf(spec.channel));
      continue;
    }
    const segment = await sources.segments.get(spec.project, name);
    if (segment !== null) lists.push(segment.filters);
  }
  if (lists.length === 0) return null;
  const joined = lists.flatMap((filters, i): FilterEntry[] => (i === 0 ? filters : [{ operator: 'OR' }, ...filters]));
  return compileFilters(spec.project, joined, spec.created_at);
}
