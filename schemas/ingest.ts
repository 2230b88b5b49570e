import Type, { type Static } from 'typebox';
import { ExternalId, Properties, ReceiptKindSchema, SubscriptionTypeSchema } from './sdk.ts';

/**
 * One entry of an ingest stream (`ingest:{pN}`, field `d`, JSON). The gateway writes them; the
 * partition actor (actors/partition) applies them in stream order. `at` is the accept time (ms).
 *
 * Tag values are pre-encoded by engine/state/users/tag-codec.ts so a number keeps its exact text:
 * `"s<text>"` for a string, `"n<number>"` for a number, `""` deletes the tag.
 */
const base = {
  project: Type.String({ minLength: 1 }),
  external_id: ExternalId,
  at: Type.Integer(),
  /**
   * The gateway writer that appended it and its sequence there (gateway/ingest/writer.ts): an
   * append whose reply was lost may be in the stream twice, and the apply skips the copy.
   */
  w: Type.Optional(Type.String()),
  n: Type.Optional(Type.Integer()),
};
const EncodedTags = Type.Record(Type.String(), Type.String());

export const IngestIdentify = Type.Object({ op: Type.Literal('identify'), ...base, tags: Type.Optional(EncodedTags) });
export const IngestTags = Type.Object({ op: Type.Literal('tags'), ...base, tags: EncodedTags });
export const IngestSubscribe = Type.Object({
  op: Type.Literal('subscribe'),
  ...base,
  type: SubscriptionTypeSchema,
  token: Type.String(),
  device_model: Type.Optional(Type.String()),
  device_os: Type.Optional(Type.String()),
  app_version: Type.Optional(Type.String()),
  web_auth: Type.Optional(Type.String()),
  web_p256: Type.Optional(Type.String()),
});
export const IngestEvent = Type.Object({
  op: Type.Literal('event'),
  ...base,
  name: Type.String(),
  properties: Type.Optional(Properties),
  idempotency_key: Type.Optional(Type.String()),
  /** Event time, ms since the epoch (the body's timestamp, else the accept time). */
  ts: Type.Integer(),
});
export const IngestReceipt = Type.Object({
  op: Type.Literal('receipt'),
  ...base,
  svc_message_id: Type.String(),
  kind: ReceiptKindSchema,
  ts: Type.Integer(),
});
/**
 * Internal: a subscription (type, token) registered at `registered_at` by another user now belongs
 * to that user; the receiving partition drops its copy if it is not newer. Never sent by clients.
 */
export const IngestDetach = Type.Object({
  op: Type.Literal('detach'),
  ...base,
  type: SubscriptionTypeSchema,
  token: Type.String(),
  registered_at: Type.Integer(),
});

/**
 * Internal: a provider said the token is dead (DROP, docs/providers.md#delivery-error-codes); the subscription is marked
 * retired unless it was registered again after `sent_at`. Written by dispatch, never by clients.
 */
export const IngestRetire = Type.Object({
  op: Type.Literal('retire'),
  ...base,
  type: SubscriptionTypeSchema,
  token: Type.String(),
  sent_at: Type.Integer(),
});

export const IngestEntry = Type.Union([IngestIdentify, IngestTags, IngestSubscribe, IngestEvent, IngestReceipt, IngestDetach, IngestRetire]);
export type IngestEntry = Static<typeof IngestEntry>;
export type IngestSubscribe = Static<typeof IngestSubscribe>;
export type IngestRetire = Static<typeof IngestRetire>;
