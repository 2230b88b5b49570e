import type { ClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { compileFilters } from '../../engine/infra/clickhouse/filters/compile.ts';
import { matchingOf, streamAudience } from '../../engine/infra/clickhouse/filters/stream.ts';
import { redriveAudience } from '../../engine/infra/clickhouse/redrive.ts';
import { allFiltersOf, compileAudience, union } from '../../engine/state/notifications/audience.ts';
import type { SegmentStore } from '../../engine/state/segments/store.ts';
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
 * awaiting `onChunk` before reading on, so a broadcast to millions never holds its audience. A
 * segment or filter audience is its users with a live subscription of the channel, as the accept
 * counted it (engine/state/notifications/audience.ts), so the jobs appended are its recipients.
 */
export async function walkAudience(spec: NotificationSpec, cursor: string, sources: AudienceSources, onChunk: (ids: string[]) => Promise<void>): Promise<void> {
  if (spec.external_ids !== null) {
    const ids = [...new Set(spec.external_ids)].sort().filter((id) => id > cursor);
    for (let i = 0; i < ids.length; i += CHUNK) await onChunk(ids.slice(i, i + CHUNK));
    return;
  }
  if (spec.redrive !== undefined) {
    await streamAudience(await sources.clickhouse(), redriveAudience(spec.project, spec.redrive), onChunk, PAGE, cursor);
    return;
  }
  const includedFilters = spec.filters ?? (await segmentsFilters(spec, spec.included_segments ?? [], sources));
  if (includedFilters === null) return;
  const included = compileAudience(spec.project, includedFilters, spec.channel, spec.created_at);
  // Exclusions need no channel condition: the included audience already has it.
  const excludedFilters = await segmentsFilters(spec, spec.excluded_segments, sources);
  const excluded = excludedFilters === null ? null : compileFilters(spec.project, excludedFilters, spec.created_at);
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
 * The union of segments as one filter list (union: AND binds tighter, so this is exact); `All`
 * stands for everyone with a live subscription of the notification's channel. Null for none, or
 * when every segment named has been deleted since the accept.
 */
async function segmentsFilters(spec: NotificationSpec, names: readonly string[], sources: AudienceSources): Promise<FilterEntry[] | null> {
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
  return lists.length === 0 ? null : union(lists);
}
