import type { NotificationSpec } from '../../schemas/notifications.ts';
import type { PushMessage } from './providers/index.ts';

/**
 * The text of `localized` for a user's locale (their `language` tag): the exact locale (`pt-BR`),
 * then its language (`pt`), then `en` (API.md section 4). Locale keys match case-insensitively.
 */
export function pick(localized: Record<string, string>, locale: string | null): string | null {
  const byLower = new Map(Object.entries(localized).map(([k, v]) => [k.toLowerCase(), v]));
  const wanted = locale?.toLowerCase() ?? '';
  return byLower.get(wanted) ?? byLower.get(wanted.split('-')[0] ?? '') ?? byLower.get('en') ?? null;
}

/** The message one user gets, in their locale; `ttlSeconds` is what is left of the notification's ttl at `now`. */
export function render(spec: NotificationSpec, locale: string | null, now: number): PushMessage {
  const start = spec.send_after ?? spec.created_at;
  return {
    notificationId: spec.id,
    title: spec.headings === null ? null : pick(spec.headings, locale),
    body: pick(spec.contents, locale) ?? '',
    data: spec.data,
    priority: spec.priority,
    ttlSeconds: Math.max(0, Math.floor((start + spec.ttl * 1000 - now) / 1000)),
    collapseId: spec.collapse_id,
  };
}
