import { createHash } from 'node:crypto';
import type { Change } from '../../schemas/changes.ts';
import { actionOf } from '../../schemas/delivery-codes.ts';
import { outcomeTexts, type OutcomeEntry } from '../../schemas/outcomes.ts';
import type { WebhookEvent, WebhookEventType } from '../../schemas/webhooks.ts';

/**
 * What each recorded fact tells a webhook receiver (docs/api.md#the-event-body). An event's id
 * comes from where it was recorded (the stream, its entry and the type), so the same fact read
 * again after a crash is the same event, and receivers deduplicate it by id.
 */

/** An event with the project and the notification it belongs to (the order key of its endpoint queue). */
export interface ProjectEvent {
  project: string;
  /** The notification it is about; '' when none (an opt-out). */
  notification: string;
  event: WebhookEvent;
}

export function eventId(source: string, type: WebhookEventType): string {
  return `evt_${createHash('sha256').update(`${source}\0${type}`).digest('base64url').slice(0, 27)}`;
}

/**
 * The outcomes of one entry of an outcomes stream (`source` naming the entry), each with the
 * source its events' ids come from: the first keeps the entry's own, as when an entry held one
 * outcome, so its events keep their ids; the i-th after it is `<source>/<i>`.
 */
export function outcomeSources(source: string, json: string): { source: string; text: string }[] {
  return outcomeTexts(json).map((text, i) => ({ source: i === 0 ? source : `${source}/${i}`, text }));
}

const iso = (ms: number): string => new Date(ms).toISOString();

function make(source: string, project: string, notification: string, type: WebhookEventType, at: number, data: Record<string, unknown>): ProjectEvent {
  return { project, notification, event: { id: eventId(source, type), type, at: iso(at), data } };
}

/**
 * A delivery attempt (an outcome entry, `source` naming its stream entry): `delivery.<status>`
 * with the delivery record's fields, and `subscription.retired` when the answer retired the token.
 */
export function outcomeEvents(source: string, o: OutcomeEntry): ProjectEvent[] {
  const record = {
    id: o.id,
    notification_id: o.notification_id,
    external_id: o.external_id,
    channel: o.channel,
    subscription_type: o.subscription_type,
    token_tail: o.token_tail,
    attempt: o.attempt,
    status: o.status,
    error_code: o.error_code,
    hint: o.hint,
    provider_message_id: o.provider_message_id,
    latency_ms: o.latency_ms,
    retrying: o.retrying,
    at: iso(o.at),
  };
  const events = [make(source, o.project, o.notification_id, `delivery.${o.status}`, o.at, record)];
  if (o.error_code !== null && actionOf(o.error_code) === 'DROP' && o.subscription_type !== null) {
    events.push(
      make(source, o.project, o.notification_id, 'subscription.retired', o.at, {
        external_id: o.external_id,
        subscription_type: o.subscription_type,
        token_tail: o.token_tail,
        error_code: o.error_code,
        notification_id: o.notification_id,
      }),
    );
  }
  return events;
}

/** A change: a receipt is `receipt.<kind>`, an opt-out written by the consent writer `user.opted_out`. */
export function changeEvents(source: string, c: Change): ProjectEvent[] {
  if (c.kind === 'receipt') {
    const data = { notification_id: c.svc_message_id, external_id: c.external_id, kind: c.receipt, at: iso(c.ts) };
    return [make(source, c.project, c.svc_message_id, `receipt.${c.receipt}`, c.ts, data)];
  }
  if (c.kind === 'user' && c.consent?.opted_out === true) {
    const data = { external_id: c.external_id, subscription_type: c.consent.type, at: iso(c.consent.at) };
    return [make(source, c.project, '', 'user.opted_out', c.consent.at, data)];
  }
  return [];
}

/** The end of a notification: `notification.completed` or `notification.canceled`, with its counts. */
export function endEvent(project: string, notification: string, type: 'notification.completed' | 'notification.canceled', at: number, data: Record<string, unknown>): ProjectEvent {
  return make(`notification:${notification}`, project, notification, type, at, { id: notification, ...data });
}
