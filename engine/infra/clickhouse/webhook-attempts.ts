import type {
  WebhookAttempt,
  WebhookAttemptFilter,
  WebhookAttemptPosition,
  WebhookAttemptRow,
  WebhookAttemptStatus,
  WebhookEventType,
} from '../../../schemas/webhooks.ts';
import type { ClickHouse } from './client.ts';
import { insertRows } from './insert.ts';
import { keysetPage } from './keyset.ts';
import { QueryFile } from './query-file.ts';

/** The table of migration 0010. */
const TABLE = 'webhook_attempts';
const pageQuery = QueryFile.load('webhook-attempts-page');

/** The filters, each the name of its parameter and of the switch of its WHERE line in webhook-attempts-page.sql. */
const filterNames = ['status', 'event_type', 'since', 'until'] as const;

/**
 * Records attempts at webhook endpoints, as one insert. `at` goes as the row has it, ms since the
 * epoch, which a DateTime64(3) column reads as such (the recorder's rows do the same).
 */
export async function insertWebhookAttempts(ch: ClickHouse, rows: readonly WebhookAttemptRow[]): Promise<void> {
  await insertRows(ch, TABLE, rows);
}

interface AttemptRow {
  event_id: string;
  event_type: WebhookEventType;
  notification_id: string;
  attempt: number;
  status: WebhookAttemptStatus;
  response_code: number;
  latency_ms: number;
  error: string;
  /** Int64, which ClickHouse writes in JSON as a string. */
  at_ms: string | number;
}

/** One page of attempts and where the next one starts (null on the last page). */
export interface WebhookAttemptsResult {
  attempts: WebhookAttempt[];
  next: WebhookAttemptPosition | null;
}

/**
 * One endpoint's attempts matching `filter`, newest first by (at, event_id, attempt), at most
 * `limit`, starting after `after` (the previous page's last row; null for the first page). Keyset
 * paging as for deliveries (./deliveries.ts listDeliveries). The caller checks that the endpoint
 * is the project's; the project is in the query all the same, so an id of another project reads
 * nothing.
 */
export async function listWebhookAttempts(
  ch: ClickHouse,
  project: string,
  webhookId: string,
  filter: WebhookAttemptFilter,
  limit: number,
  after: WebhookAttemptPosition | null,
): Promise<WebhookAttemptsResult> {
  const { rows, more } = await keysetPage<AttemptRow, WebhookAttemptFilter>(ch, {
    query: pageQuery,
    params: { project, webhook_id: webhookId },
    filter,
    filterNames,
    after: after === null ? null : { at: after.at, event_id: after.event_id, attempt: after.attempt },
    limit,
  });
  const last = rows.at(-1);
  return {
    attempts: rows.map(attempt),
    next: more && last !== undefined ? { at: Number(last.at_ms), event_id: last.event_id, attempt: Number(last.attempt) } : null,
  };
}

function attempt(row: AttemptRow): WebhookAttempt {
  const code = Number(row.response_code);
  return {
    event_id: row.event_id,
    event_type: row.event_type,
    notification_id: row.notification_id,
    attempt: Number(row.attempt),
    status: row.status,
    response_code: code === 0 ? null : code,
    latency_ms: Number(row.latency_ms),
    error: row.error === '' ? null : row.error,
    at: new Date(Number(row.at_ms)).toISOString(),
  };
}
