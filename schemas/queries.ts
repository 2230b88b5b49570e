import Type, { type Static } from 'typebox';
import { Channel, DeliveryStatus } from './outcomes.ts';
import { ReceiptBody, SubscriptionTypeSchema, type SubscriptionType } from './sdk.ts';

/**
 * The ClickHouse query API (docs/api.md#deliveries, docs/api.md#users-and-events): the query parameters of `GET /api/deliveries`,
 * `GET /api/deliveries/stats` and `GET /api/events`, and their answers. Query-string values are
 * strings; `limit` is checked as an integer after the gateway turns its digits into a number.
 */

const Nullable = <T extends Type.TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** Default and largest page size (docs/api.md#paging-with-cursors). */
export const PageLimits = { default: 100, maximum: 1000 } as const;

/** `instant`: a date-time that names one instant (engine/infra/validation/validator.ts). */
const DateTimeParam = (description: string) => Type.String({ format: 'instant', description });
export const Since = DateTimeParam('ISO 8601 date-time with a time zone; rows at or after it');
export const Until = DateTimeParam('ISO 8601 date-time with a time zone; rows before it');
export const Limit = Type.Integer({ minimum: 1, maximum: PageLimits.maximum, description: `page size, default ${PageLimits.default}` });
/**
 * Opaque. `format` names the listing the gateway checks it against: a malformed or edited cursor,
 * or one of another listing, is a 400.
 */
export const Cursor = (format: 'deliveries-cursor' | 'events-cursor' | 'webhook-attempts-cursor') =>
  Type.String({ minLength: 1, maxLength: 2048, format, description: 'next_cursor of the previous page' });
const ExternalIdParam = Type.String({ minLength: 1, maxLength: 128, description: 'one user' });

/** The filters of GET /api/deliveries, shared by /stats. */
const deliveryFilters = {
  status: Type.Optional(DeliveryStatus),
  channel: Type.Optional(Channel),
  subscription_type: Type.Optional(SubscriptionTypeSchema),
  external_id: Type.Optional(ExternalIdParam),
  notification_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'one notification' })),
  error_code: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'one error code' })),
  since: Type.Optional(Since),
  until: Type.Optional(Until),
};

export const DeliveriesQuery = Type.Object(
  { ...deliveryFilters, limit: Type.Optional(Limit), cursor: Type.Optional(Cursor('deliveries-cursor')) },
  { additionalProperties: false },
);

export const GroupBy = Type.Union([
  Type.Literal('status'),
  Type.Literal('channel'),
  Type.Literal('error_code'),
  Type.Literal('subscription_type'),
  Type.Literal('notification_id'),
  Type.Literal('hour'),
]);

/** The filters of GET /api/deliveries plus `group_by`; paging (limit, cursor) does not apply. */
export const DeliveryStatsQuery = Type.Object({ ...deliveryFilters, group_by: GroupBy }, { additionalProperties: false });

export const EventsQuery = Type.Object(
  {
    external_id: Type.Optional(ExternalIdParam),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'one event name' })),
    since: Type.Optional(Since),
    until: Type.Optional(Until),
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor('events-cursor')),
  },
  { additionalProperties: false },
);

export const ReceiptKind = ReceiptBody.properties.kind;

/** One delivery attempt of one subscription (docs/api.md#the-delivery-record). */
export const MessageDelivery = Type.Object({
  id: Type.String(),
  notification_id: Type.String(),
  external_id: Type.String(),
  channel: Channel,
  subscription_type: Nullable(SubscriptionTypeSchema),
  token_tail: Nullable(Type.String()),
  attempt: Type.Integer({ minimum: 1 }),
  status: DeliveryStatus,
  error_code: Nullable(Type.String()),
  hint: Nullable(Type.String()),
  provider_message_id: Nullable(Type.String()),
  latency_ms: Nullable(Type.Integer({ minimum: 0 })),
  at: Type.String({ format: 'date-time' }),
  /** The latest receipt of this notification and user, or null. */
  receipt: Nullable(ReceiptKind),
  /** A failed attempt that will be retried as a new record with `attempt` + 1. */
  retrying: Type.Boolean(),
});

export const DeliveriesPage = Type.Object({ deliveries: Type.Array(MessageDelivery), next_cursor: Nullable(Type.String()) });

/** One group of /stats: the key is null for rows without a value (error_code of sent rows). */
export const DeliveryGroup = Type.Object({ key: Nullable(Type.String()), count: Type.Integer({ minimum: 1 }) });
export const DeliveryStats = Type.Object({ groups: Type.Array(DeliveryGroup) });

/** GET /api/deliveries/live: the filters of GET /api/deliveries, without paging. */
export const LiveQuery = Type.Object(deliveryFilters, { additionalProperties: false });

/**
 * A frame of the live tail: new records as the recorder wrote them (`receipt` is null: receipts
 * come later), or a gap notice: records were missed before it, because this connection read too
 * slowly (`missed` counts them) or because the gateway's subscription to Redis was restored after
 * a disconnection (`missed` is null: nobody knows how many were published meanwhile).
 */
export const LiveFrame = Type.Union([
  Type.Object({ deliveries: Type.Array(MessageDelivery) }),
  Type.Object({
    gap: Type.Object({
      missed: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
        description: 'Records missed since the previous frame; null when unknown (the gateway resubscribed to Redis after losing its connection)',
      }),
    }),
  }),
]);

export const EventView = Type.Object({
  external_id: Type.String(),
  name: Type.String(),
  properties: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()])),
  idempotency_key: Nullable(Type.String()),
  at: Type.String({ format: 'date-time' }),
});

export const EventsPage = Type.Object({ events: Type.Array(EventView), next_cursor: Nullable(Type.String()) });

export type DeliveriesQuery = Static<typeof DeliveriesQuery>;
export type DeliveryStatsQuery = Static<typeof DeliveryStatsQuery>;
export type EventsQuery = Static<typeof EventsQuery>;
export type LiveQuery = Static<typeof LiveQuery>;
export type GroupBy = Static<typeof GroupBy>;
export type ReceiptKind = Static<typeof ReceiptKind>;
export type MessageDelivery = Static<typeof MessageDelivery>;
export type DeliveryGroup = Static<typeof DeliveryGroup>;
export type EventView = Static<typeof EventView>;

/** Checked delivery filters as the engine takes them: times are ms since the epoch. */
export interface DeliveryFilter {
  status?: DeliveryStatus;
  channel?: Channel;
  subscription_type?: SubscriptionType;
  external_id?: string;
  notification_id?: string;
  error_code?: string;
  /** Inclusive. */
  since?: number;
  /** Exclusive. */
  until?: number;
}

/** Where a deliveries page ends: its last row's (at, id), the sort key. */
export interface DeliveryPosition {
  at: number;
  id: string;
}

export interface EventFilter {
  external_id?: string;
  name?: string;
  since?: number;
  until?: number;
}

/** Where an events page ends: its last row's (at, external_id, stream_id), the sort key. */
export interface EventPosition {
  at: number;
  external_id: string;
  stream_id: string;
}
