import Type, { type Static } from 'typebox';
import { Filters } from './filters.ts';
import { Channel } from './outcomes.ts';
import { Redrive } from './redrive.ts';
import { ExternalId } from './sdk.ts';
import { SegmentName } from './segments.ts';

/**
 * Notifications (docs/api.md#notifications): the request body, the answers, the stored record and the log
 * entries that carry a notification from the gateway through fan-out to dispatch.
 */

export const NotificationLimits = {
  /** Body limit in bytes (docs/api.md#limits). */
  body: 1024 * 1024,
  /** `data` serialised, bytes. */
  data: 2048,
  userIds: 20_000,
  subscriptionIds: 20_000,
  /** Default and largest `ttl`, seconds. */
  ttlDefault: 259_200,
  ttlMax: 2_419_200,
  /** How long an idempotency key is remembered, seconds (30 days). */
  idempotencySeconds: 30 * 24 * 3600,
} as const;

/**
 * Texts by locale (docs/api.md#the-notification-body). A record's key pattern becomes
 * patternProperties, which let other keys through: `additionalProperties` refuses them.
 */
export const Localized = Type.Record(Type.String({ minLength: 1, maxLength: 35, pattern: '^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$' }), Type.String({ minLength: 1, maxLength: 4096 }), {
  minProperties: 1,
  maxProperties: 200,
  additionalProperties: false,
});

/** Texts by locale, `en` among them. */
export const Contents = Type.Intersect([Localized, Type.Object({ en: Type.String({ minLength: 1, maxLength: 4096 }) })]);

export const NotificationBody = Type.Object(
  {
    include_external_user_ids: Type.Optional(Type.Array(ExternalId, { minItems: 1, maxItems: NotificationLimits.userIds })),
    /** Subscription ids as GET /api/users shows them; an unknown one is named in the answer, not refused. */
    include_subscription_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { minItems: 1, maxItems: NotificationLimits.subscriptionIds })),
    included_segments: Type.Optional(Type.Array(SegmentName, { minItems: 1, maxItems: 100 })),
    excluded_segments: Type.Optional(Type.Array(SegmentName, { maxItems: 100 })),
    filters: Type.Optional(Filters),
    headings: Type.Optional(Localized),
    contents: Contents,
    data: Type.Optional(Type.Record(Type.String({ maxLength: 128 }), Type.Unknown())),
    channel: Type.Optional(Channel),
    send_after: Type.Optional(Type.String({ format: 'date-time' })),
    ttl: Type.Optional(Type.Integer({ minimum: 0, maximum: NotificationLimits.ttlMax })),
    priority: Type.Optional(Type.Union([Type.Literal('high'), Type.Literal('normal')])),
    collapse_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    throttle_rate_per_minute: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    /** Transactional sends: the project's frequency cap does not apply (docs/api.md#frequency-caps). */
    ignore_frequency_cap: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** At most `max` sends of a channel to one user in any `hours` (docs/api.md#frequency-caps). */
export const FrequencyCapBounds = { max: { min: 1, max: 1000 }, hours: { min: 1, max: 24 * 30 } } as const;
export const FrequencyCap = Type.Object({
  max: Type.Integer({ minimum: FrequencyCapBounds.max.min, maximum: FrequencyCapBounds.max.max }),
  hours: Type.Integer({ minimum: FrequencyCapBounds.hours.min, maximum: FrequencyCapBounds.hours.max }),
});
export type FrequencyCap = Static<typeof FrequencyCap>;

export const NotificationStatus = Type.Union([
  Type.Literal('scheduled'),
  Type.Literal('queued'),
  Type.Literal('sending'),
  Type.Literal('completed'),
  Type.Literal('canceled'),
]);

/** One entry of `warnings` in the 201 answer: a field taken but not acted on, and why. */
export const NotificationWarning = Type.Object({ field: Type.String(), message: Type.String() });

export const NotificationCreated = Type.Object({
  id: Type.String(),
  svc_message_id: Type.String(),
  recipients: Type.Integer({ minimum: 0 }),
  status: Type.Union([Type.Literal('queued'), Type.Literal('scheduled')]),
  errors: Type.Object({
    invalid_external_user_ids: Type.Array(Type.String()),
    /** By subscription id: the ids of no live subscription of the channel (OneSignal's name). */
    invalid_player_ids: Type.Optional(Type.Array(Type.String())),
  }),
  /** OneSignal's answer carries it (its older idempotency key); always null here. */
  external_id: Type.Null(),
  /** Fields taken but not acted on (docs/api.md#moving-from-onesignal). */
  warnings: Type.Array(NotificationWarning),
  /** A re-drive: the notification whose content it sends again (docs/api.md#re-drive). */
  redrive_of: Type.Optional(Type.String()),
});

export const NotificationCounts = Type.Object({
  sent: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  skipped: Type.Integer({ minimum: 0 }),
  delivered: Type.Integer({ minimum: 0 }),
  opened: Type.Integer({ minimum: 0 }),
  clicked: Type.Integer({ minimum: 0 }),
});

/** One platform's counts in `platform_delivery_stats`, under OneSignal's names. */
export const PlatformCounts = Type.Object({
  successful: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  errored: Type.Integer({ minimum: 0 }),
  converted: Type.Integer({ minimum: 0 }),
  received: Type.Integer({ minimum: 0 }),
});

/** Per platform, under OneSignal's keys; web push is not told apart by browser here. */
export const PlatformDeliveryStats = Type.Object({
  ios: Type.Optional(PlatformCounts),
  android: Type.Optional(PlatformCounts),
  web_push: Type.Optional(PlatformCounts),
  email: Type.Optional(PlatformCounts),
  sms: Type.Optional(PlatformCounts),
});

export const NotificationView = Type.Object({
  id: Type.String(),
  channel: Channel,
  status: NotificationStatus,
  recipients: Type.Integer({ minimum: 0 }),
  created_at: Type.String({ format: 'date-time' }),
  send_after: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  canceled: Type.Boolean(),
  counts: NotificationCounts,
  /** OneSignal's names of the counts (docs/api.md#moving-from-onesignal). */
  successful: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  errored: Type.Integer({ minimum: 0 }),
  converted: Type.Integer({ minimum: 0 }),
  received: Type.Integer({ minimum: 0 }),
  remaining: Type.Integer({ minimum: 0 }),
  /** created_at in Unix seconds. */
  queued_at: Type.Integer({ minimum: 0 }),
  /** Counts per platform with a delivery record, from ClickHouse; absent when it cannot answer. */
  platform_delivery_stats: Type.Optional(PlatformDeliveryStats),
  /** A re-drive: the notification whose content it sends again (docs/api.md#re-drive). */
  redrive_of: Type.Optional(Type.String()),
});

/** DELETE /api/notifications/{id}: the view, and OneSignal's `success`. */
export const NotificationCanceled = Type.Object({ ...NotificationView.properties, success: Type.Literal(true) });

/** `app_id`, which OneSignal's clients add to GET and DELETE: when present, the key's project. */
export const NotificationQuery = Type.Object({ app_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })) }, { additionalProperties: false });

/** GET /api/notifications: one page of a project's notifications, newest first. */
export const NotificationPageLimits = { default: 20, maximum: 100 } as const;

export const NotificationsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: NotificationPageLimits.maximum, description: `page size, default ${NotificationPageLimits.default}` })),
    cursor: Type.Optional(Type.String({ format: 'uuid', description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);

export const NotificationsPage = Type.Object({ notifications: Type.Array(NotificationView), next_cursor: Type.Union([Type.String(), Type.Null()]) });

const Link = Type.String({ minLength: 1, maxLength: 2048 });
const Action = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }), text: Type.String({ maxLength: 256 }), icon: Type.Optional(Link), url: Type.Optional(Link) });

/**
 * What a notification asks of each provider besides its text, under OneSignal's names
 * (docs/api.md#moving-from-onesignal; docs/providers.md says where each one goes).
 */
export const NotificationOptions = Type.Object(
  {
    /** Opened on a click: `app_url` on mobile, `web_url` on the web, `url` on both. */
    url: Type.Optional(Link),
    app_url: Type.Optional(Link),
    web_url: Type.Optional(Link),
    subtitle: Type.Optional(Localized),
    ios_sound: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    ios_badgeType: Type.Optional(Type.Union([Type.Literal('None'), Type.Literal('SetTo'), Type.Literal('Increase')])),
    ios_badgeCount: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    thread_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    ios_category: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    mutable_content: Type.Optional(Type.Boolean()),
    content_available: Type.Optional(Type.Boolean()),
    ios_interruption_level: Type.Optional(Type.Union([Type.Literal('passive'), Type.Literal('active'), Type.Literal('time_sensitive'), Type.Literal('critical')])),
    ios_attachments: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Link, { maxProperties: 10 })),
    android_channel_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    android_sound: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    big_picture: Type.Optional(Link),
    chrome_web_image: Type.Optional(Link),
    chrome_web_icon: Type.Optional(Link),
    chrome_web_badge: Type.Optional(Link),
    web_buttons: Type.Optional(Type.Array(Action, { maxItems: 2 })),
    email_from_name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    email_from_address: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
    email_preheader: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    /** The email's body is HTML: it came as `email_body`. */
    email_html: Type.Optional(Type.Boolean()),
    sms_from: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    sms_media_urls: Type.Optional(Type.Array(Link, { minItems: 1, maxItems: 10 })),
  },
  { additionalProperties: false },
);

/**
 * The notification as fan-out and dispatch read it (field `spec` of its record, JSON): the
 * request with defaults filled, and what the gateway resolved at accept.
 */
export const NotificationSpec = Type.Object({
  id: Type.String(),
  project: Type.String(),
  channel: Channel,
  headings: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]),
  contents: Type.Record(Type.String(), Type.String()),
  data: Type.Record(Type.String(), Type.Unknown()),
  ttl: Type.Integer(),
  priority: Type.Union([Type.Literal('high'), Type.Literal('normal')]),
  collapse_id: Type.Union([Type.String(), Type.Null()]),
  throttle_rate_per_minute: Type.Integer({ minimum: 0 }),
  /** Exactly one targeting mode is set; by subscription id, `external_ids` holds their owners. */
  external_ids: Type.Union([Type.Array(Type.String()), Type.Null()]),
  /** By subscription id: each owner's targeted subscriptions (`TYPE:token`), the only ones sent to. */
  subscriptions: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
  included_segments: Type.Union([Type.Array(Type.String()), Type.Null()]),
  excluded_segments: Type.Array(Type.String()),
  filters: Type.Union([Filters, Type.Null()]),
  created_at: Type.Integer(),
  send_after: Type.Union([Type.Integer(), Type.Null()]),
  /** Absent on notifications created before 0.8.0. */
  options: Type.Optional(NotificationOptions),
  /** Some text holds placeholders, filled per user at dispatch (docs/api.md#personal-content). */
  personal: Type.Optional(Type.Literal(true)),
  /** Sent at this minute of each user's local day (docs/api.md#local-time); absent: at once. */
  local_time: Type.Optional(Type.Object({ minute: Type.Integer({ minimum: 0, maximum: 1439 }), default_timezone: Type.String() })),
  /** The project's cap for the channel when the notification was created; absent: none or ignored. */
  frequency_cap: Type.Optional(FrequencyCap),
  /** A re-drive's audience, read from the delivery records of `of` at fan-out; the other targeting modes are null. */
  redrive: Type.Optional(Redrive),
});

/**
 * A fan-out's dispatch job (field `d` of `dispatch:{pN}`, JSON): the first attempt for several users
 * of one partition (engine/infra/scripts/lua/appendJobs-3.lua). Each user runs as a DispatchJob of
 * their own; the job is recorded once, when all of them are done.
 */
export const UsersJob = Type.Object({
  n: Type.String(),
  project: Type.String(),
  users: Type.Array(Type.String(), { minItems: 1 }),
  attempt: Type.Literal(1),
});

/** One dispatch job (field `d` of `dispatch:{pN}`, JSON): one user of one notification, one attempt (a retry, a put-off local-time job, or an earlier release's). */
export const DispatchJob = Type.Object({
  n: Type.String(),
  project: Type.String(),
  external_id: Type.String(),
  attempt: Type.Integer({ minimum: 1 }),
  /** Retries only: the subscriptions (`TYPE:token`) still to retry; absent means every live one (of the spec's `subscriptions`, when set). */
  subs: Type.Optional(Type.Array(Type.String())),
  /** A local-time job put off to the user's local time: when it was due (ms); it is not put off again. */
  due: Type.Optional(Type.Integer()),
});

export type NotificationBody = Static<typeof NotificationBody>;
export type NotificationCreated = Static<typeof NotificationCreated>;
export type NotificationWarning = Static<typeof NotificationWarning>;
export type NotificationView = Static<typeof NotificationView>;
export type NotificationCanceled = Static<typeof NotificationCanceled>;
export type NotificationsQuery = Static<typeof NotificationsQuery>;
export type NotificationStatus = Static<typeof NotificationStatus>;
export type NotificationCounts = Static<typeof NotificationCounts>;
export type PlatformCounts = Static<typeof PlatformCounts>;
export type PlatformDeliveryStats = Static<typeof PlatformDeliveryStats>;
export type NotificationSpec = Static<typeof NotificationSpec>;
export type NotificationOptions = Static<typeof NotificationOptions>;
export type DispatchJob = Static<typeof DispatchJob>;
export type UsersJob = Static<typeof UsersJob>;
