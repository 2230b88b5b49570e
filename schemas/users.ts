import Type, { type Static } from 'typebox';
import { SubscriptionTypeSchema } from './sdk.ts';

/** `GET /api/users/{external_id}` (docs/api.md#users-and-events): the applied state of one user. */
export const SubscriptionView = Type.Object({
  /** The subscription's id, as `include_subscription_ids` of a notification takes it. */
  id: Type.String({ format: 'uuid' }),
  type: SubscriptionTypeSchema,
  token_tail: Type.String(),
  device_model: Type.Union([Type.String(), Type.Null()]),
  device_os: Type.Union([Type.String(), Type.Null()]),
  app_version: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([Type.Literal('live'), Type.Literal('retired')]),
  updated_at: Type.String({ format: 'date-time' }),
});

export const ConsentState = Type.Object({ opted_out: Type.Boolean(), at: Type.String({ format: 'date-time' }) });

export const UserView = Type.Object({
  external_id: Type.String(),
  tags: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()])),
  subscriptions: Type.Array(SubscriptionView),
  consent: Type.Record(Type.String(), ConsentState),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export type SubscriptionView = Static<typeof SubscriptionView>;
export type ConsentState = Static<typeof ConsentState>;
export type UserView = Static<typeof UserView>;
