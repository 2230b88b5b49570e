import { ALL_SEGMENT } from '../../../schemas/segments.ts';
import { compileFilters, usersRangeEnd, type CompiledFilters } from '../../infra/clickhouse/filters/compile.ts';
import { QueryFile } from '../../infra/clickhouse/query-file.ts';
import type { SegmentStore } from './store.ts';

const allPage = QueryFile.load('segment-all-page');
const allCount = QueryFile.load('segment-all-count').text([]);

/**
 * The audience of `All` (every user with at least one live subscription) in the shape of
 * compileFilters, so countAudience and streamAudience serve it like any filter list.
 */
export function allAudience(project: string): CompiledFilters {
  return { query: allPage.text([]), count: allCount, params: { project }, ranges: { query: allPage.text(['through']), end: usersRangeEnd } };
}

/**
 * A segment name resolved to its compiled audience over the users mirror, or null when the
 * project has no segment of that name. `nowMs` fixes the window of event conditions. Rejects when
 * Redis cannot be read.
 */
export async function resolveSegment(
  segments: Pick<SegmentStore, 'get'>,
  project: string,
  name: string,
  nowMs = Date.now(),
): Promise<CompiledFilters | null> {
  if (name === ALL_SEGMENT) return allAudience(project);
  const segment = await segments.get(project, name);
  return segment === null ? null : compileFilters(project, segment.filters, nowMs);
}
