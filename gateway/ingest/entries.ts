import { encodeTags } from '../../engine/state/users/tag-codec.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { EventBody, IdentifyBody, ReceiptBody, SdkOp, SubscriptionBody, TagsBody } from '../../schemas/sdk.ts';

/**
 * Checked request bodies to ingest log entries (schemas/ingest.ts). Fields are copied one by one,
 * so nothing else of the request (identity_hash above all) reaches the log.
 */

export function identifyEntry(project: string, body: IdentifyBody, at: number): IngestEntry {
  const entry: IngestEntry = { op: 'identify', project, external_id: body.external_id, at };
  // A top-level timezone is the `timezone` tag (docs/api.md#local-time); it wins over tags.timezone.
  const tags = body.timezone === undefined ? body.tags : { ...body.tags, timezone: body.timezone };
  if (tags !== undefined) entry.tags = encodeTags(tags);
  return entry;
}

export function tagsEntry(project: string, externalId: string, tags: TagsBody, at: number): IngestEntry {
  return { op: 'tags', project, external_id: externalId, at, tags: encodeTags(tags) };
}

export function subscribeEntry(project: string, externalId: string, body: SubscriptionBody, at: number): IngestEntry {
  const entry: IngestEntry = { op: 'subscribe', project, external_id: externalId, at, type: body.type, token: body.token };
  if (body.device_model !== undefined) entry.device_model = body.device_model;
  if (body.device_os !== undefined) entry.device_os = body.device_os;
  if (body.app_version !== undefined) entry.app_version = body.app_version;
  if (body.type === 'WEB_PUSH') {
    entry.web_auth = body.web_auth;
    entry.web_p256 = body.web_p256;
  }
  return entry;
}

export function eventEntry(project: string, body: EventBody, at: number): IngestEntry {
  const entry: IngestEntry = { op: 'event', project, external_id: body.external_id, at, name: body.name, ts: timeOf(body.timestamp, at) };
  if (body.properties !== undefined) entry.properties = body.properties;
  if (body.idempotency_key !== undefined) entry.idempotency_key = body.idempotency_key;
  return entry;
}

export function receiptEntry(project: string, body: ReceiptBody, at: number): IngestEntry {
  return {
    op: 'receipt',
    project,
    external_id: body.external_id,
    at,
    svc_message_id: body.svc_message_id,
    kind: body.kind,
    ts: timeOf(body.timestamp, at),
  };
}

/** One batch or WebSocket operation. */
export function opEntry(project: string, op: SdkOp, at: number): IngestEntry {
  switch (op.op) {
    case 'identify':
      return identifyEntry(project, op, at);
    case 'tags':
      return tagsEntry(project, op.external_id, op.tags, at);
    case 'subscribe':
      return subscribeEntry(project, op.external_id, op, at);
    case 'event':
      return eventEntry(project, op, at);
    case 'receipt':
      return receiptEntry(project, op, at);
  }
}

/**
 * A body timestamp in ms; the accept time when absent. A leap second (`:60`, valid RFC 3339 that
 * JavaScript cannot place) counts as the first instant of the next minute.
 */
function timeOf(timestamp: string | undefined, at: number): number {
  if (timestamp === undefined) return at;
  const ms = Date.parse(timestamp);
  if (Number.isFinite(ms)) return ms;
  const leap = Date.parse(timestamp.replace(/(T\d{2}:\d{2}):60/i, '$1:59'));
  return Number.isFinite(leap) ? leap + 1000 : at;
}
