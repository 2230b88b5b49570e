import Type, { type Static } from 'typebox';
import { Cursor, Limit, Since, Until } from './queries.ts';

/** Webhooks: event streams a project's backend receives (docs/api.md#webhooks). */

/** Every event type, in the order the docs list them. */
export const WebhookEventTypes = [
  'delivery.sent',
  'delivery.failed',
  'delivery.skipped',
  'receipt.delivered',
  'receipt.opened',
  'receipt.clicked',
  'notification.completed',
  'notification.canceled',
  'subscription.retired',
  'user.opted_out',
] as const;
export const WebhookEventType = Type.Union([
  Type.Literal('delivery.sent'),
  Type.Literal('delivery.failed'),
  Type.Literal('delivery.skipped'),
  Type.Literal('receipt.delivered'),
  Type.Literal('receipt.opened'),
  Type.Literal('receipt.clicked'),
  Type.Literal('notification.completed'),
  Type.Literal('notification.canceled'),
  Type.Literal('subscription.retired'),
  Type.Literal('user.opted_out'),
]);

/** A Standard Webhooks secret: `whsec_` and base64 of 24 to 64 bytes. */
export const WebhookSecret = Type.String({ pattern: '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$' });

export const WebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    events: Type.Array(WebhookEventType, { minItems: 1, maxItems: WebhookEventTypes.length, uniqueItems: true }),
    secret: Type.Optional(WebhookSecret),
  },
  { additionalProperties: false },
);

/** Active, or disabled: by a 410 (`gone`) or after failing for WEBHOOK_RETRY_WINDOW_MS (`failing`). */
export const WebhookState = Type.Union([Type.Literal('active'), Type.Literal('disabled')]);
export const WebhookDisabledReason = Type.Union([Type.Literal('gone'), Type.Literal('failing'), Type.Literal('backlog_full')]);

const Nullable = <T extends Type.TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: 'date-time' });

/** How an endpoint is doing, from what its sender last saw. */
export const WebhookHealth = Type.Object({
  state: WebhookState,
  disabled_reason: Nullable(WebhookDisabledReason),
  disabled_at: Nullable(Time),
  /** Events waiting to be delivered, oldest first. */
  queued: Type.Integer({ minimum: 0 }),
  /** Attempts failed in a row since the last success; 0 when the last attempt succeeded. */
  failures_in_row: Type.Integer({ minimum: 0 }),
  /** Since when every attempt has failed; null when the last one succeeded. */
  failing_since: Nullable(Time),
  next_attempt_at: Nullable(Time),
  last_attempt_at: Nullable(Time),
  last_success_at: Nullable(Time),
  /** HTTP status of the last answer; null when none came (refused, timeout). */
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  delivered: Type.Integer({ minimum: 0 }),
  failed_attempts: Type.Integer({ minimum: 0 }),
});

export const Webhook = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(WebhookEventType),
  secret: WebhookSecret,
  created_at: Time,
});
export const WebhookWithHealth = Type.Object({ ...Webhook.properties, health: WebhookHealth });
export const WebhookList = Type.Object({ webhooks: Type.Array(WebhookWithHealth) });
export const WebhookParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

/** What a receiver gets: the POST body of one event. `id` is the same on every retry. */
export const WebhookEvent = Type.Object({
  id: Type.String(),
  type: WebhookEventType,
  at: Time,
  data: Type.Record(Type.String(), Type.Unknown()),
});

/** One POST to a receiver, as recorded (ClickHouse `webhook_attempts`). Times are ms since the epoch. */
export const WebhookAttemptRow = Type.Object({
  project: Type.String(),
  webhook_id: Type.String(),
  event_id: Type.String(),
  event_type: WebhookEventType,
  /** The notification the event is about; '' when none. */
  notification_id: Type.String(),
  /** 1 for an event's first attempt at this endpoint. */
  attempt: Type.Integer({ minimum: 1 }),
  status: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]),
  /** HTTP status of the answer; 0 when none came. */
  response_code: Type.Integer({ minimum: 0, maximum: 999 }),
  latency_ms: Type.Integer({ minimum: 0 }),
  /** Why a failed attempt failed (an HTTP status text, `timeout`, a connection error); '' when delivered. */
  error: Type.String(),
  at: Type.Integer({ minimum: 0 }),
});

export const WebhookAttemptStatus = WebhookAttemptRow.properties.status;

/** GET /api/webhooks/{id}/attempts: its filters and paging (docs/api.md#webhook-attempts). */
export const WebhookAttemptsQuery = Type.Object(
  {
    status: Type.Optional(WebhookAttemptStatus),
    event_type: Type.Optional(WebhookEventType),
    since: Type.Optional(Since),
    until: Type.Optional(Until),
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor('webhook-attempts-cursor')),
  },
  { additionalProperties: false },
);

/** One attempt as GET /api/webhooks/{id}/attempts answers it. */
export const WebhookAttempt = Type.Object({
  event_id: Type.String(),
  event_type: WebhookEventType,
  /** '' when the event is about no notification. */
  notification_id: Type.String(),
  attempt: Type.Integer({ minimum: 1 }),
  status: WebhookAttemptStatus,
  /** null when no answer came (refused, timeout). */
  response_code: Nullable(Type.Integer({ minimum: 1, maximum: 999 })),
  latency_ms: Type.Integer({ minimum: 0 }),
  /** null when delivered. */
  error: Nullable(Type.String()),
  at: Time,
});
export const WebhookAttemptPage = Type.Object({ attempts: Type.Array(WebhookAttempt), next_cursor: Nullable(Type.String()) });

/** Checked attempt filters as the engine takes them: times are ms since the epoch. */
export interface WebhookAttemptFilter {
  status?: WebhookAttemptStatus;
  event_type?: WebhookEventType;
  /** Inclusive. */
  since?: number;
  /** Exclusive. */
  until?: number;
}

/** Where an attempts page ends: its last row's (at, event_id, attempt), the sort key within an endpoint. */
export interface WebhookAttemptPosition {
  at: number;
  event_id: string;
  attempt: number;
}

export type WebhookEventType = Static<typeof WebhookEventType>;
export type WebhookBody = Static<typeof WebhookBody>;
export type Webhook = Static<typeof Webhook>;
export type WebhookWithHealth = Static<typeof WebhookWithHealth>;
export type WebhookHealth = Static<typeof WebhookHealth>;
export type WebhookEvent = Static<typeof WebhookEvent>;
export type WebhookAttemptRow = Static<typeof WebhookAttemptRow>;
export type WebhookDisabledReason = Static<typeof WebhookDisabledReason>;
export type WebhookAttemptStatus = Static<typeof WebhookAttemptStatus>;
export type WebhookAttemptsQuery = Static<typeof WebhookAttemptsQuery>;
export type WebhookAttempt = Static<typeof WebhookAttempt>;
export type WebhookAttemptPage = Static<typeof WebhookAttemptPage>;
