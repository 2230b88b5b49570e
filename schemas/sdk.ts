import Type, { type Static } from 'typebox';

/** Request bodies of the SDK surface (docs/api.md#sdk-bodies) and their limits (docs/api.md#limits). */

export const SubscriptionTypes = ['IOS_PUSH', 'ANDROID_PUSH', 'EMAIL', 'SMS', 'WEB_PUSH'] as const;
export type SubscriptionType = (typeof SubscriptionTypes)[number];
export const ReceiptKinds = ['delivered', 'opened', 'clicked'] as const;

export const ExternalId = Type.String({ minLength: 1, maxLength: 128 });
/**
 * Any string: a malformed hash is an identity failure (401 identity_verification_failed,
 * docs/api.md#keys-and-projects), decided by the gateway's identity check, not a schema error.
 */
export const IdentityHash = Type.String({ maxLength: 256 });
/** Spelled out as tuples: a Union over `.map(...)` loses the members and its static type is never. */
export const SubscriptionTypeSchema = Type.Union([
  Type.Literal('IOS_PUSH'),
  Type.Literal('ANDROID_PUSH'),
  Type.Literal('EMAIL'),
  Type.Literal('SMS'),
  Type.Literal('WEB_PUSH'),
]);
export const ReceiptKindSchema = Type.Union([Type.Literal('delivered'), Type.Literal('opened'), Type.Literal('clicked')]);
const Timestamp = Type.String({ format: 'date-time' });

/** Tag writes: a string (at most 1024 chars) or number sets, `""` or null deletes. */
export const TagValue = Type.Union([Type.String({ maxLength: 1024 }), Type.Number(), Type.Null()]);
/** A user's time zone (docs/api.md#local-time): an IANA name or an offset from UTC. */
export const TimeZone = Type.String({ format: 'timezone', maxLength: 64 });
/**
 * Tag writes by name, at most 200; the `timezone` tag must be a time zone (or `""`/null, which
 * delete it). The key length rule is repeated as propertyNames, which `properties` skip.
 */
const KeyName = { minLength: 1, maxLength: 128 };
export const Tags = Type.Record(Type.String(KeyName), TagValue, {
  maxProperties: 200,
  propertyNames: KeyName,
  // In allOf: beside the record's own patternProperties, Ajv's strict mode refuses `properties`.
  allOf: [{ properties: { timezone: Type.Union([TimeZone, Type.Literal(''), Type.Null()]) } }],
});

export const IdentifyBody = Type.Object(
  {
    external_id: ExternalId,
    tags: Type.Optional(Tags),
    /** Sets the `timezone` tag, as `tags.timezone` would. */
    timezone: Type.Optional(TimeZone),
    identity_hash: Type.Optional(IdentityHash),
  },
  { additionalProperties: false },
);

/** Token formats per type (docs/api.md#subscriptions-and-token-formats); WEB_PUSH also needs its keys. */
const tokenFields = {
  IOS_PUSH: { token: Type.String({ pattern: '^[0-9a-fA-F]{64,200}$' }) },
  ANDROID_PUSH: { token: Type.String({ minLength: 1, maxLength: 4096 }) },
  EMAIL: { token: Type.String({ format: 'email', maxLength: 320 }) },
  SMS: { token: Type.String({ pattern: '^\\+[0-9]{8,15}$' }) },
  WEB_PUSH: {
    token: Type.String({ pattern: '^https:', maxLength: 4096, format: 'uri' }),
    web_auth: Type.String({ minLength: 1, maxLength: 256 }),
    web_p256: Type.String({ minLength: 1, maxLength: 256 }),
  },
} as const;

const deviceFields = {
  device_model: Type.Optional(Type.String({ maxLength: 128 })),
  device_os: Type.Optional(Type.String({ maxLength: 128 })),
  app_version: Type.Optional(Type.String({ maxLength: 64 })),
};

/**
 * Subscription bodies keyed by `type`: validate against the one schema of the body's type so
 * errors name that type's rules only (a plain anyOf would list every branch's complaints).
 */
export const SubscriptionBodyByType = {
  IOS_PUSH: Type.Object({ type: Type.Literal('IOS_PUSH'), ...tokenFields.IOS_PUSH, ...deviceFields }, { additionalProperties: false }),
  ANDROID_PUSH: Type.Object(
    { type: Type.Literal('ANDROID_PUSH'), ...tokenFields.ANDROID_PUSH, ...deviceFields },
    { additionalProperties: false },
  ),
  EMAIL: Type.Object({ type: Type.Literal('EMAIL'), ...tokenFields.EMAIL, ...deviceFields }, { additionalProperties: false }),
  SMS: Type.Object({ type: Type.Literal('SMS'), ...tokenFields.SMS, ...deviceFields }, { additionalProperties: false }),
  WEB_PUSH: Type.Object({ type: Type.Literal('WEB_PUSH'), ...tokenFields.WEB_PUSH, ...deviceFields }, { additionalProperties: false }),
} as const;
export const SubscriptionBody = Type.Union([
  SubscriptionBodyByType.IOS_PUSH,
  SubscriptionBodyByType.ANDROID_PUSH,
  SubscriptionBodyByType.EMAIL,
  SubscriptionBodyByType.SMS,
  SubscriptionBodyByType.WEB_PUSH,
]);

export const TagsBody = Tags;

export const Properties = Type.Record(Type.String(KeyName), Type.Union([Type.String({ maxLength: 1024 }), Type.Number()]), {
  maxProperties: 100,
  propertyNames: KeyName,
});

export const EventBody = Type.Object(
  {
    external_id: ExternalId,
    name: Type.String({ minLength: 1, maxLength: 128 }),
    properties: Type.Optional(Properties),
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    timestamp: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);

export const ReceiptBody = Type.Object(
  {
    svc_message_id: Type.String({ minLength: 1, maxLength: 128 }),
    external_id: ExternalId,
    kind: ReceiptKindSchema,
    timestamp: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);

export const ConsentBody = Type.Object(
  { external_id: ExternalId, subscription_type: SubscriptionTypeSchema },
  { additionalProperties: false },
);

/** One operation of `/api/sdk/batch` and of a WebSocket frame: an op name, external_id, that op's body. */
const opFields = { external_id: ExternalId, identity_hash: Type.Optional(IdentityHash) };
export const IdentifyOp = Type.Object(
  { op: Type.Literal('identify'), ...opFields, tags: Type.Optional(Tags), timezone: Type.Optional(TimeZone) },
  { additionalProperties: false },
);
export const TagsOp = Type.Object({ op: Type.Literal('tags'), ...opFields, tags: Tags }, { additionalProperties: false });
export const EventOp = Type.Object(
  {
    op: Type.Literal('event'),
    ...opFields,
    name: EventBody.properties.name,
    properties: Type.Optional(Properties),
    idempotency_key: EventBody.properties.idempotency_key,
    timestamp: EventBody.properties.timestamp,
  },
  { additionalProperties: false },
);
export const ReceiptOp = Type.Object(
  {
    op: Type.Literal('receipt'),
    ...opFields,
    svc_message_id: ReceiptBody.properties.svc_message_id,
    kind: ReceiptBody.properties.kind,
    timestamp: ReceiptBody.properties.timestamp,
  },
  { additionalProperties: false },
);
/**
 * A subscribe op carries the subscription body flat, next to op and external_id; validated by
 * its `type` like SubscriptionBodyByType.
 */
const subscribeOp = (t: SubscriptionType) =>
  Type.Object({ op: Type.Literal('subscribe'), ...opFields, ...SubscriptionBodyByType[t].properties }, { additionalProperties: false });
export const SubscribeOpByType: Record<SubscriptionType, Type.TSchema> = {
  IOS_PUSH: subscribeOp('IOS_PUSH'),
  ANDROID_PUSH: subscribeOp('ANDROID_PUSH'),
  EMAIL: subscribeOp('EMAIL'),
  SMS: subscribeOp('SMS'),
  WEB_PUSH: subscribeOp('WEB_PUSH'),
};
export type SubscribeOp = { op: 'subscribe'; external_id: string; identity_hash?: string } & SubscriptionBody;

/** Schemas of the ops other than subscribe (which is validated through SubscribeOpByType). */
export const OpSchemas = { identify: IdentifyOp, tags: TagsOp, event: EventOp, receipt: ReceiptOp } as const;

/** Operations per `/api/sdk/batch` call. */
export const BatchLimits = { minItems: 1, maxItems: 1000 } as const;

/**
 * The envelope the gateway checks first: its operations are checked one by one against their own
 * schemas (OpSchemas, SubscribeOpByType), so a list over the limit costs nothing more.
 */
export const BatchBody = Type.Object({ operations: Type.Array(Type.Unknown(), BatchLimits) }, { additionalProperties: false });

/** `/api/sdk/batch` as documented: each operation is one of the ops (the gateway checks them one by one). */
export const BatchRequest = Type.Object(
  { operations: Type.Array(Type.Union([IdentifyOp, ...Object.values(SubscribeOpByType), TagsOp, EventOp, ReceiptOp]), BatchLimits) },
  { additionalProperties: false },
);

/** An operation on the WebSocket channel: a batch operation plus `seq` (docs/api.md#the-websocket-channel). */
export const SocketAnswer = Type.Union([
  Type.Object({ seq: Type.Integer(), accepted: Type.Literal(true) }),
  Type.Object({ seq: Type.Union([Type.Integer(), Type.Null()]), errors: Type.Array(Type.Object({ code: Type.String(), message: Type.String(), path: Type.Optional(Type.String()) })) }),
]);

export const Accepted = Type.Object({ accepted: Type.Literal(true) });
export const BatchAccepted = Type.Object({ accepted: Type.Literal(true), count: Type.Integer() });
/** What the web SDK needs to subscribe a browser (docs/api.md#web-push-for-the-web-sdk). */
export const WebPushSettings = Type.Object({
  vapid_public_key: Type.String({ description: "The project's VAPID public key (base64url): the applicationServerKey of pushManager.subscribe" }),
  delivered_receipts: Type.Boolean({ description: 'Whether the worker sends a `delivered` receipt for each push it shows' }),
});
export const ConsentAnswer = Type.Object({
  external_id: Type.String(),
  subscription_type: SubscriptionTypeSchema,
  opted_out: Type.Boolean(),
  at: Type.String({ format: 'date-time' }),
});

export type IdentifyBody = Static<typeof IdentifyBody>;
export type SubscriptionBody = Static<typeof SubscriptionBody>;
export type TagsBody = Static<typeof TagsBody>;
export type EventBody = Static<typeof EventBody>;
export type ReceiptBody = Static<typeof ReceiptBody>;
export type ConsentBody = Static<typeof ConsentBody>;
export type ConsentAnswer = Static<typeof ConsentAnswer>;
export type IdentifyOp = Static<typeof IdentifyOp>;
export type TagsOp = Static<typeof TagsOp>;
export type EventOp = Static<typeof EventOp>;
export type ReceiptOp = Static<typeof ReceiptOp>;
export type SdkOp = IdentifyOp | SubscribeOp | TagsOp | EventOp | ReceiptOp;
