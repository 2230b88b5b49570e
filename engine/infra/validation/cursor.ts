import { createHash } from 'node:crypto';
import type { DeliveryPosition, EventPosition } from '../../../schemas/queries.ts';
import type { WebhookAttemptPosition } from '../../../schemas/webhooks.ts';

/**
 * Page cursors (docs/api.md#paging-with-cursors): opaque base64url text holding where a page ended. The bytes are an
 * 8-byte checksum, then the JSON position tagged with its listing, so an edited or truncated
 * cursor, or one of the other listing, is refused (400) instead of starting anywhere. The
 * checksum is not a secret: a made-up position still reads only the caller's own project.
 */

const CHECKSUM_BYTES = 8;
const base64url = /^[A-Za-z0-9_-]+$/;

type Listing = 'deliveries' | 'events' | 'webhook-attempts';

function checksum(payload: Buffer): Buffer {
  return createHash('sha256').update(payload).digest().subarray(0, CHECKSUM_BYTES);
}

function encode(listing: Listing, position: readonly (string | number)[]): string {
  const payload = Buffer.from(JSON.stringify([listing, ...position]), 'utf8');
  return Buffer.concat([checksum(payload), payload]).toString('base64url');
}

/** The position of a cursor of `listing`, or null when the text is not one. */
function decode(listing: Listing, cursor: string): unknown[] | null {
  if (!base64url.test(cursor)) return null;
  const bytes = Buffer.from(cursor, 'base64url');
  // Decoding ignores stray trailing bits: only the canonical spelling of the bytes is accepted.
  if (bytes.toString('base64url') !== cursor || bytes.length <= CHECKSUM_BYTES) return null;
  const payload = bytes.subarray(CHECKSUM_BYTES);
  if (!checksum(payload).equals(bytes.subarray(0, CHECKSUM_BYTES))) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed[0] !== listing) return null;
  return parsed.slice(1);
}

/**
 * The instants a record's `at` can hold (an API date-time, years 0000 to 9999, which ClickHouse's
 * DateTime64 keeps as given), so a cursor's time outside them was not written by us. An absurd
 * time used to reach the query and fail there (503) instead of being refused (400).
 */
const FIRST_AT = Date.parse('0000-01-01T00:00:00.000Z');
const LAST_AT = Date.parse('9999-12-31T23:59:59.999Z');
const isTime = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= FIRST_AT && (v as number) <= LAST_AT;
const isText = (v: unknown): v is string => typeof v === 'string';

export function deliveryCursor(position: DeliveryPosition): string {
  return encode('deliveries', [position.at, position.id]);
}

export function readDeliveryCursor(cursor: string): DeliveryPosition | null {
  const p = decode('deliveries', cursor);
  const [at, id] = p ?? [];
  return p?.length === 2 && isTime(at) && isText(id) ? { at, id } : null;
}

export function eventCursor(position: EventPosition): string {
  return encode('events', [position.at, position.external_id, position.stream_id]);
}

export function readEventCursor(cursor: string): EventPosition | null {
  const p = decode('events', cursor);
  const [at, externalId, streamId] = p ?? [];
  return p?.length === 3 && isTime(at) && isText(externalId) && isText(streamId) ? { at, external_id: externalId, stream_id: streamId } : null;
}

export function webhookAttemptCursor(position: WebhookAttemptPosition): string {
  return encode('webhook-attempts', [position.at, position.event_id, position.attempt]);
}

/** An attempt number as the table holds it (UInt16, from 1). */
const isAttempt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= 65_535;

export function readWebhookAttemptCursor(cursor: string): WebhookAttemptPosition | null {
  const p = decode('webhook-attempts', cursor);
  const [at, eventId, attempt] = p ?? [];
  return p?.length === 3 && isTime(at) && isText(eventId) && isAttempt(attempt) ? { at, event_id: eventId, attempt } : null;
}
