import Type, { type Static } from 'typebox';
import { SubscriptionTypeSchema, type SubscriptionType } from './sdk.ts';

/**
 * One outcome of the delivery-outcomes stream (field `d`, JSON): the dispatch actor records one
 * per delivery attempt, several to an entry (outcomeTexts), and the recorder inserts each as one
 * `message_deliveries` row (docs/architecture.md#every-attempt-recorded). The fields are those of a delivery record
 * (docs/api.md#the-delivery-record) except `receipt`,
 * which is joined from receipts when read, plus `project`. Times are ms since the epoch.
 *
 * `id` is the dedup key: the dispatch actor derives it from (notification_id, subscription,
 * attempt), so an outcome appended again after a dispatch crash carries the same `id`, and the
 * recorder's insert deduplication token over a batch's stream IDs drops a redelivered batch.
 */
export const DeliveryStatus = Type.Union([Type.Literal('sent'), Type.Literal('failed'), Type.Literal('skipped')]);
export const Channel = Type.Union([Type.Literal('PUSH'), Type.Literal('SMS'), Type.Literal('EMAIL')]);

const Nullable = <T extends Type.TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const OutcomeEntry = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    project: Type.String({ minLength: 1 }),
    notification_id: Type.String({ minLength: 1 }),
    external_id: Type.String({ minLength: 1, maxLength: 128 }),
    channel: Channel,
    /** Null when the user had no subscription to try (`skipped` with `no_subscription`). */
    subscription_type: Nullable(SubscriptionTypeSchema),
    /** The last characters of the token (`…a9f3`); never the whole token. Null as above. */
    token_tail: Nullable(Type.String({ maxLength: 16 })),
    /** At most 65535: message_deliveries.attempt is a UInt16. */
    attempt: Type.Integer({ minimum: 1, maximum: 65_535 }),
    status: DeliveryStatus,
    /** Set when `failed` or `skipped` (docs/providers.md#delivery-error-codes lists the codes); null when `sent`. */
    error_code: Nullable(Type.String({ minLength: 1 })),
    /** The operator hint of `error_code`; null when `sent`. */
    hint: Nullable(Type.String()),
    provider_message_id: Nullable(Type.String()),
    /** Time the provider took to answer; null when no request was made. */
    latency_ms: Nullable(Type.Integer({ minimum: 0, maximum: 4_294_967_295 })),
    /** A failed attempt that will be retried as a new entry with `attempt` + 1. */
    retrying: Type.Boolean(),
    /** Up to the end of 2299, the last instant a DateTime64 column holds. */
    at: Type.Integer({ minimum: 0, maximum: 10_413_791_999_999 }),
  },
  { additionalProperties: false },
);

export type DeliveryStatus = Static<typeof DeliveryStatus>;
export type Channel = Static<typeof Channel>;

/** The subscription types a channel sends to (docs/api.md#the-notification-body). */
export const channelTypes: Readonly<Record<Channel, readonly SubscriptionType[]>> = {
  PUSH: ['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH'],
  SMS: ['SMS'],
  EMAIL: ['EMAIL'],
};

/** The channel that sends to each subscription type. */
export const channelOf = Object.fromEntries(Object.entries(channelTypes).flatMap(([channel, types]) => types.map((t) => [t, channel]))) as Readonly<Record<SubscriptionType, Channel>>;
export type OutcomeEntry = Static<typeof OutcomeEntry>;

/**
 * An outcome as the dispatch actor builds it: `tail` is the token's last characters, which
 * outcomeJson writes as the entry's `token_tail` after the ellipsis.
 */
export interface OutcomeDraft extends Omit<OutcomeEntry, 'token_tail'> {
  tail: string | null;
}

/**
 * The JSON of an outcome, with `token_tail`'s ellipsis escaped (`\u2026`, which every JSON reader
 * decodes, ClickHouse's included): the JSON of an ASCII token is then ASCII. V8 keeps a string
 * holding `…` at two bytes a character, and so would be the JSON, its join with the entry's other
 * outcomes and the command written to Redis (docs/performance.md, "One byte a character").
 * `"tail":` matches the key alone: inside a JSON string every `"` is escaped.
 */
export function outcomeJson(draft: OutcomeDraft): string {
  const json = JSON.stringify(draft);
  return draft.tail === null ? json.replace('"tail":', '"token_tail":') : json.replace('"tail":"', '"token_tail":"\\u2026');
}

/**
 * What parts the outcomes of one entry's value: each is compact JSON on a line of its own
 * (engine/infra/scripts/lua/recordAttempts-5.lua joins them with a newline). A newline followed by
 * `{`, not a newline alone, so that an entry of one outcome written over several lines (which
 * indent what is inside the object; a string's newline is escaped) is still one outcome.
 */
const OUTCOME_SEPARATOR = '\n{';

/** What an entry's value is read as: its text, or (in the engine, which has Buffer) its bytes. */
interface Searchable {
  indexOf(search: string, from: number): number;
}

/** The outcomes of one entry's value, in order, each cut from it by `cut`. */
export function outcomeParts<T>(value: Searchable, cut: (from: number, to?: number) => T): T[] {
  const parts: T[] = [];
  let start = 0;
  for (let at = value.indexOf(OUTCOME_SEPARATOR, 0); at !== -1; at = value.indexOf(OUTCOME_SEPARATOR, at + 1)) {
    parts.push(cut(start, at));
    start = at + 1;
  }
  parts.push(cut(start));
  return parts;
}

/** The JSON texts of the outcomes of one entry's value, in order. */
export function outcomeTexts(value: string): string[] {
  return outcomeParts(value, (from, to) => value.slice(from, to));
}
