import type { EventFilter, EventPosition, EventView } from '../../../schemas/queries.ts';
import type { ClickHouse } from './client.ts';
import { keysetPage } from './keyset.ts';
import { QueryFile } from './query-file.ts';

const pageQuery = QueryFile.load('events-page');

/** The filters, each the name of its parameter and of the switch of its WHERE line in events-page.sql. */
const filterNames = ['external_id', 'name', 'since', 'until'] as const;

interface EventRow {
  external_id: string;
  name: string;
  /** The JSON text the recorder stored. */
  properties: string;
  idempotency_key: string | null;
  stream_id: string;
  /** Int64, which ClickHouse writes in JSON as a string. */
  at_ms: string | number;
}

/** One page of events and where the next one starts (null on the last page). */
export interface EventsResult {
  events: EventView[];
  next: EventPosition | null;
}

/**
 * One project's events matching `filter`, newest first by (at, external_id, stream_id), at most
 * `limit`, starting after `after` (the previous page's last row; null for the first page). Keyset
 * paging as for deliveries (./deliveries.ts listDeliveries).
 */
export async function listEvents(ch: ClickHouse, project: string, filter: EventFilter, limit: number, after: EventPosition | null): Promise<EventsResult> {
  const { rows, more } = await keysetPage<EventRow, EventFilter>(ch, {
    query: pageQuery,
    params: { project },
    filter,
    filterNames,
    after: after === null ? null : { at: after.at, external_id: after.external_id, stream_id: after.stream_id },
    limit,
  });
  const last = rows.at(-1);
  return {
    events: rows.map((row) => ({
      external_id: row.external_id,
      name: row.name,
      properties: JSON.parse(row.properties) as EventView['properties'],
      idempotency_key: row.idempotency_key,
      at: new Date(Number(row.at_ms)).toISOString(),
    })),
    next: more && last !== undefined ? { at: Number(last.at_ms), external_id: last.external_id, stream_id: last.stream_id } : null,
  };
}
