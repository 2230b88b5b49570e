import type { NotificationOptions, NotificationSpec } from '../../schemas/notifications.ts';
import { fillPersonal } from '../../engine/state/notifications/personal.ts';
import { decodeTag } from '../../engine/state/users/tag-codec.ts';
import type { PushMessage } from './providers/index.ts';

/**
 * The text of `localized` for a user's locale (their `language` tag): the exact locale (`pt-BR`),
 * then its language (`pt`), then `en` (docs/api.md#sending-consent-cancel-retries-locale). Locale keys match case-insensitively.
 */
export function pick(localized: Record<string, string>, locale: string | null): string | null {
  const byLower = lowered(localized);
  const wanted = locale?.toLowerCase() ?? '';
  return byLower.get(wanted) ?? byLower.get(wanted.split('-')[0] ?? '') ?? byLower.get('en') ?? null;
}

/** Texts by lower-cased locale, built once per spec's text (specs are cached and never change). */
const loweredTexts = new WeakMap<Record<string, string>, Map<string, string>>();

function lowered(localized: Record<string, string>): Map<string, string> {
  let byLower = loweredTexts.get(localized);
  if (byLower === undefined) {
    byLower = new Map(Object.entries(localized).map(([k, v]) => [k.toLowerCase(), v]));
    loweredTexts.set(localized, byLower);
  }
  return byLower;
}

const NO_OPTIONS: NotificationOptions = {};

/** Most locales whose last message is kept per spec (a locale is a user's tag: any string). */
const MAX_LOCALES = 64;
/** The last message of each spec and locale: the users of one locale share it while its ttlSeconds holds. */
const lastRendered = new WeakMap<NotificationSpec, Map<string, PushMessage>>();

/**
 * The message one user gets, in their locale; `ttlSeconds` is what is left of the notification's
 * ttl at `now`. The message may be shared with other users: it is never changed.
 */
export function render(spec: NotificationSpec, locale: string | null, now: number): PushMessage {
  const start = spec.send_after ?? spec.created_at;
  const ttlSeconds = Math.max(0, Math.floor((start + spec.ttl * 1000 - now) / 1000));
  let byLocale = lastRendered.get(spec);
  if (byLocale === undefined) {
    byLocale = new Map();
    lastRendered.set(spec, byLocale);
  }
  const key = locale ?? '';
  const last = byLocale.get(key);
  if (last !== undefined && last.ttlSeconds === ttlSeconds) return last;
  const message: PushMessage = {
    notificationId: spec.id,
    title: spec.headings === null ? null : pick(spec.headings, locale),
    body: pick(spec.contents, locale) ?? '',
    data: spec.data,
    priority: spec.priority,
    ttlSeconds,
    collapseId: spec.collapse_id,
    subtitle: spec.options?.subtitle === undefined ? null : pick(spec.options.subtitle, locale),
    options: spec.options ?? NO_OPTIONS,
  };
  if (last === undefined && byLocale.size >= MAX_LOCALES) byLocale.clear();
  byLocale.set(key, message);
  return message;
}

/** What a user's placeholders are filled from: their tags, decoded, and their `external_id`. */
export function personalValues(externalId: string, tags: readonly string[]): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (let i = 0; i + 1 < tags.length; i += 2) values[tags[i] ?? ''] = decodeTag(tags[i + 1] ?? '');
  values['external_id'] = externalId;
  return values;
}

/**
 * A user's own copy of a message with personal texts (docs/api.md#personal-content); an email's
 * HTML body gets its filled values HTML-escaped.
 */
export function personalize(message: PushMessage, spec: NotificationSpec, values: Record<string, unknown>): PushMessage {
  const html = spec.channel === 'EMAIL' && message.options.email_html === true;
  return {
    ...message,
    title: message.title === null ? null : fillPersonal(message.title, values, false),
    body: fillPersonal(message.body, values, html),
  };
}
