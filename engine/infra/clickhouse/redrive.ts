import type { Redrive } from '../../../schemas/redrive.ts';
import type { CompiledFilters } from './filters/compile.ts';
import { QueryFile } from './query-file.ts';

const file = QueryFile.load('redrive-audience');
const filters = ['status', 'error_code', 'channel', 'since', 'until'] as const;

/**
 * A re-drive's audience as streamAudience and countAudience read it (docs/api.md#re-drive): the
 * users whose last delivery record for `redrive.of` matches, paged in external_id order.
 */
export function redriveAudience(project: string, redrive: Redrive): CompiledFilters {
  const on: string[] = filters.filter((name) => redrive[name] !== undefined);
  const params: Record<string, unknown> = { project, of: redrive.of };
  for (const name of filters) if (redrive[name] !== undefined) params[name] = redrive[name];
  return { query: file.text([...on, 'page']), count: `SELECT count() AS count FROM (${file.text(on)})`, params };
}
