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
 * changes of a user are in one stream, so later changes have higher IDs). Written by the
 * synchronous consent writer, without a state: the recorder then reads the user from Redis. The
 * apply of an earlier release wrote one per user and batch, with the user's four hashes
 * (`state`); the apply now writes a `users` change.
 */
const UserState = Type.Object({ user: FlatHash, tags: FlatHash, subs: FlatHash, consent: FlatHash });

export const UserChange = Type.Object({
  kind: Type.Literal('user'),
  project: Type.String(),
  external_id: Type.String(),
  state: Type.Optional(UserState),
  /** The consent the consent writer wrote (the webhooks role tells receivers of opt-outs). */
  consent: Type.Optional(Type.Object({ type: SubscriptionTypeSchema, opted_out: Type.Boolean(), at: Type.Integer() })),
});

/**
 * Every user an apply batch created or changed: one entry a batch (one for every 64 users of a
 * larger one), after the batch's events and receipts, so a batch costs one append for its users.
 * Each user's state as the batch left it is its record as stored (MessagePack,
 * engine/state/users/user-record.ts), in a field `r` of the entry beside this JSON, one a user in
 * the order of `users`. Each user is recorded as a `user` change with that state and this entry's ID would be.
 */
export const UsersChange = Type.Object({
  kind: Type.Literal('users'),
  users: Type.Array(Type.Object({ project: Type.String(), external_id: Type.String() })),
});

export const Change = Type.Union([EventChange, ReceiptChange, UserChange, UsersChange]);
export type Change = Static<typeof Change>;
export type UserChange = Static<typeof UserChange>;
