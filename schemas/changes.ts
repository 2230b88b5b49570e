import Type, { type Static } from 'typebox';
import { Properties, ReceiptKindSchema, SubscriptionTypeSchema } from './sdk.ts';

/**
 * One entry of a `changes:{pN}` stream (field `d`, JSON), written by the partition actor's apply
 * script in the same call that applies the ingest entry. The ClickHouse recorder consumes it.
 * `id` is the ingest stream ID the change came from. Stream IDs are unique within one partition's
 * stream only, and a user lives in exactly one partition, so (project, external_id, id) is the
 * deterministic dedup key of a change; `id` alone is not.
 */
const base = { id: Type.String(), project: Type.String(), external_id: Type.String() };

/** An event: its ingest entry's own JSON with kind and id put in front, so the entry's other fields (op, at, a writer's stamp) ride along. */
export const EventChange = Type.Object({
  kind: Type.Literal('event'),
  ...base,
  name: Type.String(),
  properties: Type.Optional(Properties),
  idempotency_key: Type.Optional(Type.String()),
  ts: Type.Integer(),
});
export const ReceiptChange = Type.Object({
  kind: Type.Literal('receipt'),
  ...base,
  svc_message_id: Type.String(),
  receipt: ReceiptKindSchema,
  ts: Type.Integer(),
});

/** A hash as HGETALL returns it: field, value, field, value, ... */
const FlatHash = Type.Array(Type.String());

/**
 * The user was created or its tags, subscriptions or consent changed: the recorder writes the
 * user's state to the ClickHouse `users` mirror, versioned by this change's own stream ID (all
 * changes of a user are in one stream, so later changes have higher IDs). Written by the apply
 * script once per user and batch, with the user's four hashes as the batch left them (`state`),
 * and by the synchronous consent writer, without: the recorder then reads the user from Redis.
 */
export const UserChange = Type.Object({
  kind: Type.Literal('user'),
  project: Type.String(),
  external_id: Type.String(),
  state: Type.Optional(Type.Object({ user: FlatHash, tags: FlatHash, subs: FlatHash, consent: FlatHash })),
  /** The consent the consent writer wrote (the webhooks role tells receivers of opt-outs). */
  consent: Type.Optional(Type.Object({ type: SubscriptionTypeSchema, opted_out: Type.Boolean(), at: Type.Integer() })),
});

export const Change = Type.Union([EventChange, ReceiptChange, UserChange]);
export type Change = Static<typeof Change>;
export type UserChange = Static<typeof UserChange>;
