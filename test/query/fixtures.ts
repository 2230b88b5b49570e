import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import type { OutcomeEntry } from '../../schemas/outcomes.ts';
import type { MessageDelivery } from '../../schemas/queries.ts';
import { call, type Answer } from '../helpers/http.ts';
import type { InProcess } from '../helpers/in-process.ts';

/** A message_deliveries row as the recorder inserts it: an outcome entry plus its stream id. */
export type DeliveryRow = OutcomeEntry & { stream_id: string };

export interface EventRow {
  project: string;
  external_id: string;
  name: string;
  properties: string;
  idempotency_key: string | null;
  stream_id: string;
  at: number;
}

/** 2026-11-01T00:00:00.000Z: fixtures count from here. */
export const BASE = Date.UTC(2026, 10, 1);

/** ClickHouse compares strings byte by byte, as Buffer.compare does. */
export function bytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Newest first, as GET /api/deliveries lists: (at, id) descending. */
export function newestDeliveryFirst(a: { at: number; id: string }, b: { at: number; id: string }): number {
  return b.at - a.at || bytes(b.id, a.id);
}

const pushTypes = ['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH'] as const;
const pushErrors = { IOS_PUSH: 'apns_410_Unregistered', ANDROID_PUSH: 'fcm_404_UNREGISTERED', WEB_PUSH: 'webpush_410' } as const;

/**
 * Delivery row number `i` of a fixture: three rows share each ms (ties ordered by id), ids are
 * not in insert order, 4 notifications, 10 users, channels PUSH/PUSH/PUSH/EMAIL/SMS, every 7th
 * failed and every 11th skipped (the 11th of those without a subscription).
 */
export function deliveryRow(project: string, i: number, overrides: Partial<DeliveryRow> = {}): DeliveryRow {
  const channel = (['PUSH', 'PUSH', 'PUSH', 'EMAIL', 'SMS'] as const)[i % 5] ?? 'PUSH';
  const status = i % 7 === 0 ? 'failed' : i % 11 === 0 ? 'skipped' : 'sent';
  const noSubscription = status === 'skipped' && i % 2 === 0;
  const type = noSubscription ? null : channel === 'PUSH' ? (pushTypes[i % 3] ?? 'IOS_PUSH') : channel;
  const error =
    status === 'sent' ? null : status === 'skipped' ? (noSubscription ? 'no_subscription' : 'opted_out') : type === 'SMS' ? 'twilio_21610' : type === 'EMAIL' ? 'sendgrid_400' : type === null ? 'timeout' : pushErrors[type];
  return {
    id: `d-${String((i * 37) % 1000).padStart(3, '0')}-${i}`,
    project,
    notification_id: `n${i % 4}`,
    external_id: `u${i % 10}`,
    channel,
    subscription_type: type,
    token_tail: type === null ? null : `…${String(1000 + i).slice(-4)}`,
    attempt: 1 + (i % 2),
    status,
    error_code: error,
    hint: error === null ? null : `hint for ${error}`,
    provider_message_id: status === 'sent' ? `pm-${i}` : null,
    latency_ms: status === 'skipped' ? null : 10 + i,
    retrying: status === 'failed' && i % 2 === 0,
    at: BASE + Math.floor(i / 3) * 1000,
    stream_id: `${BASE + i}-0`,
    ...overrides,
  };
}

/** What the API shows for a row (receipt as given). */
export function shown(row: DeliveryRow, receipt: MessageDelivery['receipt'] = null): MessageDelivery {
  return {
    id: row.id,
    notification_id: row.notification_id,
    external_id: row.external_id,
    channel: row.channel,
    subscription_type: row.subscription_type,
    token_tail: row.token_tail,
    attempt: row.attempt,
    status: row.status,
    error_code: row.error_code,
    hint: row.hint,
    provider_message_id: row.provider_message_id,
    latency_ms: row.latency_ms,
    at: new Date(row.at).toISOString(),
    receipt,
    retrying: row.retrying,
  };
}

/** Another project of the gateway's deployment, for isolation and for tests that add rows. */
export function otherProject(gw: InProcess): Promise<CreatedProject> {
  return new Keystore(gw.redis, gw.topology).createProject('other', false);
}

/** GET `path` with `params` (encoded by URLSearchParams: a space becomes `+`). */
export function get(gw: InProcess, path: string, params: Record<string, string | number>, key: string | null): Promise<Answer> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return call(`${gw.url}${path}${query === '' ? '' : `?${query}`}`, 'GET', key);
}

/** The `path` of each error item of a 400 answer. */
export function errorPaths(answer: Answer): string[] {
  const body = answer.body as { errors?: { code: string; path?: string }[] };
  return (body.errors ?? []).map((e) => `${e.code} ${e.path ?? ''}`);
}
