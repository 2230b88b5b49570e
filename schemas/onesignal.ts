import Type, { type TSchema } from 'typebox';
import { NotificationBody, NotificationOptions } from './notifications.ts';
import { ExternalId, type SubscriptionType } from './sdk.ts';

/**
 * The fields of OneSignal's create-notification body that are not the engine's own
 * (docs/api.md#moving-from-onesignal): each one is translated into the engine's body, refused with
 * a reason, or accepted and ignored with a warning. A bad value of any of them is still a 400.
 */

const Text = Type.String({ maxLength: 4096 });
const Strings = Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 20_000 });
const Tokens = Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { minItems: 1, maxItems: 20_000 });
const AnyObject = Type.Record(Type.String(), Type.Unknown());
const Button = Type.Object({ id: Type.String(), text: Type.Optional(Type.String()), icon: Type.Optional(Type.String()), url: Type.Optional(Type.String()) });

/** Fields the engine acts on: translated into its own body (engine/state/notifications/onesignal.ts). */
export const OneSignalTranslated = {
  app_id: Type.String({ minLength: 1, maxLength: 128 }),
  include_aliases: Type.Object({ external_id: Type.Array(ExternalId, { minItems: 1, maxItems: 20_000 }) }, { additionalProperties: false }),
  /** OneSignal's older name of include_subscription_ids. */
  include_player_ids: NotificationBody.properties.include_subscription_ids,
  target_channel: Type.Union([Type.Literal('push'), Type.Literal('email'), Type.Literal('sms')]),
  /** OneSignal's older name of the idempotency key. */
  external_id: Type.String({ minLength: 1, maxLength: 256 }),
  email_subject: Type.String({ minLength: 1, maxLength: 4096 }),
  email_body: Type.String({ minLength: 1, maxLength: 4096 }),
  /** A template of the project (docs/api.md#templates): its texts where the body has none. */
  template_id: Type.String({ minLength: 1, maxLength: 128 }),
  /** `timezone`: at `delivery_time_of_day` in each user's zone; `last-active` is taken with a warning. */
  delayed_option: Type.Union([Type.Literal('timezone'), Type.Literal('last-active')]),
  delivery_time_of_day: Type.String({ minLength: 1, maxLength: 16 }),
  /** false: the project's frequency cap does not apply (the engine's ignore_frequency_cap). */
  enable_frequency_cap: Type.Boolean(),
} as const;

/** Fields sent on to the providers, kept as the notification's options (NotificationOptions). */
export const OneSignalOptions = {
  ...Object.fromEntries(Object.entries(NotificationOptions.properties).filter(([k]) => k !== 'email_html')),
  /** The official client's spellings of ios_badgeType and ios_badgeCount. */
  ios_badge_type: NotificationOptions.properties.ios_badgeType,
  ios_badge_count: NotificationOptions.properties.ios_badgeCount,
} as Record<string, TSchema>;

/**
 * OneSignal's lists of tokens, each of one subscription type: they target those subscriptions, as
 * include_subscription_ids does (engine/state/notifications/subscriptions.ts).
 */
export const OneSignalTokens: Record<string, SubscriptionType> = {
  include_email_tokens: 'EMAIL',
  /** OneSignal sends to these addresses; here they must be EMAIL subscriptions of some user. */
  email_to: 'EMAIL',
  include_phone_numbers: 'SMS',
  /** Chrome's Web Push subscriptions are known here by their endpoint. */
  include_chrome_web_reg_ids: 'WEB_PUSH',
  /** Chrome apps registered with GCM, whose tokens FCM took over. */
  include_chrome_reg_ids: 'ANDROID_PUSH',
  include_ios_tokens: 'IOS_PUSH',
  include_android_reg_ids: 'ANDROID_PUSH',
};

/**
 * Token lists of platforms the engine has no provider for: taken with a warning, each token
 * listed in errors.invalid_player_ids, as OneSignal lists tokens it cannot reach.
 */
export const OneSignalUnreachable = {
  include_wp_wns_uris: Strings,
  include_amazon_reg_ids: Strings,
} as const;

const notSent = 'accepted and ignored: this version does not send it to the providers';
const otherPlatform = 'accepted and ignored: no Huawei, Amazon or Windows provider';
const platforms = 'accepted and ignored: push goes to every live push subscription of the user';

/** Fields accepted and ignored, each with the warning the answer carries. */
export const OneSignalIgnored: Record<string, { schema: TSchema; message: string }> = {
  name: { schema: Text, message: 'accepted and ignored: notifications have no name' },
  aggregation: { schema: Text, message: 'accepted and ignored' },
  kind: { schema: Type.Integer(), message: 'accepted and ignored' },
  custom_data: { schema: AnyObject, message: 'accepted and ignored: placeholders fill from the user\'s tags' },
  include_unsubscribed: { schema: Type.Boolean(), message: 'accepted and ignored: opted-out users are never sent to' },
  ...Object.fromEntries(
    ['is_ios', 'is_android', 'is_any_web', 'is_chrome_web', 'is_firefox', 'is_safari', 'is_chrome'].map((f) => [f, { schema: Type.Boolean(), message: platforms }]),
  ),
  ...Object.fromEntries(['is_huawei', 'is_wp_wns', 'is_adm'].map((f) => [f, { schema: Type.Boolean(), message: otherPlatform }])),
  ...Object.fromEntries(
    [
      'huawei_msg_type',
      'huawei_big_picture',
      'adm_big_picture',
      'huawei_channel_id',
      'huawei_existing_channel_id',
      'huawei_small_icon',
      'huawei_large_icon',
      'adm_small_icon',
      'adm_large_icon',
      'huawei_sound',
      'adm_sound',
      'wp_wns_sound',
      'huawei_led_color',
      'huawei_accent_color',
      'adm_group',
      'huawei_badge_class',
      'huawei_category',
      'huawei_bi_tag',
    ].map((f) => [f, { schema: Text, message: otherPlatform }]),
  ),
  ...Object.fromEntries(['huawei_visibility', 'huawei_badge_add_num', 'huawei_badge_set_num'].map((f) => [f, { schema: Type.Number(), message: otherPlatform }])),
  adm_group_message: { schema: AnyObject, message: otherPlatform },
  apns_alert: { schema: AnyObject, message: notSent },
  android_background_layout: { schema: AnyObject, message: notSent },
  buttons: { schema: Type.Array(Button, { maxItems: 10 }), message: notSent },
  email_bcc: { schema: Type.Array(Text, { maxItems: 100 }), message: notSent },
  email_warm_up: { schema: AnyObject, message: notSent },
  ...Object.fromEntries(['disable_email_click_tracking'].map((f) => [f, { schema: Type.Boolean(), message: notSent }])),
  ...Object.fromEntries(['android_visibility', 'summary_arg_count', 'ios_relevance_score'].map((f) => [f, { schema: Type.Number(), message: notSent }])),
  ...Object.fromEntries(
    [
      'target_content_identifier',
      'global_image',
      'chrome_big_picture',
      'existing_android_channel_id',
      'small_icon',
      'large_icon',
      'firefox_icon',
      'chrome_icon',
      'android_led_color',
      'android_accent_color',
      'web_push_topic',
      'apns_push_type_override',
      'android_group',
      'android_group_message',
      'summary_arg',
      'email_reply_to_address',
      'email_sender_domain',
    ].map((f) => [f, { schema: Text, message: notSent }]),
  ),
};

/** OneSignal's spellings of three of the engine's own fields, taken besides the engine's. */
export const OneSignalSpellings = {
  /** OneSignal's 10 (high) and lower (normal), besides `high` and `normal`. */
  priority: Type.Union([Type.Literal('high'), Type.Literal('normal'), Type.Integer({ minimum: 0, maximum: 10 })]),
  /** The official client sends it as a string of digits. */
  throttle_rate_per_minute: Type.Union([Type.Integer({ minimum: 0, maximum: 10_000_000 }), Type.String({ pattern: '^[0-9]{1,8}$' })]),
  /** ISO 8601, RFC 1123, or OneSignal's `2015-09-24 14:00:00 GMT-0700`. */
  send_after: Type.String({ minLength: 1, maxLength: 80 }),
} as const;

/**
 * The POST /api/notifications body as documented: the engine's fields with OneSignal's spellings,
 * and every OneSignal field it takes. engine/state/notifications/body.ts checks it in two steps.
 */
export const NotificationRequest = Type.Object(
  {
    ...NotificationBody.properties,
    ...Object.fromEntries(Object.entries(OneSignalSpellings).map(([k, s]) => [k, Type.Optional(s)])),
    ...Object.fromEntries(Object.entries(OneSignalTranslated).map(([k, s]) => [k, Type.Optional(s)])),
    ...Object.fromEntries(Object.entries(OneSignalOptions).map(([k, s]) => [k, Type.Optional(s)])),
    ...Object.fromEntries(Object.keys(OneSignalTokens).map((k) => [k, Type.Optional(Tokens)])),
    ...Object.fromEntries(Object.entries(OneSignalUnreachable).map(([k, s]) => [k, Type.Optional(s)])),
    ...Object.fromEntries(Object.entries(OneSignalIgnored).map(([k, f]) => [k, Type.Optional(f.schema)])),
  },
  { additionalProperties: false },
);
