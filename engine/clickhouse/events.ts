import type { EventFilter, EventPosition, EventView } from '../../schemas/queries.ts';
import type { ClickHouse } from './client.ts';
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
  const switches: string[] = [];
  const params: Record<string, string | number> = { project, limit: limit + 1 };
  for (const name of filterNames) {
    const value = filter[name];
    if (value === undefined) continue;
    switches.push(name);
    params[name] = value;
  }
  if (after !== null) {
    switches.push('after');
    params['after_at'] = after.at;
    params['after_external_id'] = after.external_id;
    params['after_stream_id'] = after.stream_id;
  }
  const result = await ch.query({ query: pageQuery.text(switches), query_params: params, format: 'JSONEachRow' });
  const rows = await result.json<EventRow>();
  const page = rows.length > limit ? rows.slice(0, limit) : rows;
  const last = page.at(-1);
  return {
    events: page.map((row) => ({
      external_id: row.external_id,
      name: row.name,
      properties: JSON.parse(row.properties) as EventView['properties'],
      idempotency_key: row.idempotency_key,
      at: new Date(Number(row.at_ms)).toISOString(),
    })),
    next:
      rows.length > limit && last !== undefined ? { at: Number(last.at_ms), external_id: last.external_id, stream_id: last.stream_id } : null,
  };
}
