import Type, { type Static } from 'typebox';
import { SubscriptionTypeSchema } from './sdk.ts';

/**
 * Values stored in the live user state in Redis (key layout: engine/infra/redis/topology.ts). Times are ms
 * since the epoch. Written by the partition actor's Lua (subscriptions) and the consent writer.
 */
export const StoredSubscription = Type.Object({
  type: SubscriptionTypeSchema,
  token: Type.String(),
  device_model: Type.Optional(Type.String()),
  device_os: Type.Optional(Type.String()),
  app_version: Type.Optional(Type.String()),
  web_auth: Type.Optional(Type.String()),
  web_p256: Type.Optional(Type.String()),
  state: Type.Union([Type.Literal('live'), Type.Literal('retired')]),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  /** Accept time of the latest registration; the oldest is dropped past 20 subscriptions. */
  registered_at: Type.Integer(),
});

export const StoredConsent = Type.Object({ opted_out: Type.Boolean(), at: Type.Integer() });

export type StoredSubscription = Static<typeof StoredSubscription>;
export type StoredConsent = Static<typeof StoredConsent>;
