import Type from 'typebox';
import { capped, errorItem, violations } from '../../infra/validation/ajv-errors.ts';
import { checkFilters } from '../../infra/clickhouse/filters/check.ts';
import { compileTwoWay } from '../../infra/validation/validator.ts';
import type { ErrorItem } from '../../../schemas/errors.ts';
import { Contents, NotificationBody, NotificationLimits, type NotificationOptions, type NotificationWarning } from '../../../schemas/notifications.ts';
import { NotificationRequest, OneSignalSpellings } from '../../../schemas/onesignal.ts';
import { fromOneSignal, type TokenTarget } from './onesignal.ts';
import { personalTextError } from './personal.ts';

/**
 * The gateway's check of a POST /api/notifications body (docs/api.md#the-notification-body), in
 * two steps. First the request schema: the engine's fields taken as they come, and every
 * OneSignal field with its type. Then the body translated into the engine's own
 * (./onesignal.ts) against its schema, with `filters` left to the filter checker (whose errors
 * name the entry), and what a schema cannot say: exactly one targeting mode, and the size of
 * `data`. Every violation in one 400.
 */

/** The request: the engine's own fields unchecked (the second step checks them), the rest typed. */
const Request = Type.Object(
  {
    ...NotificationRequest.properties,
    ...Object.fromEntries(Object.keys(NotificationBody.properties).filter((k) => !(k in OneSignalSpellings)).map((k) => [k, Type.Optional(Type.Unknown())])),
  },
  { additionalProperties: false },
);
const request = compileTwoWay(Request);

/** NotificationBody with `filters` taken as is; checkFilters looks at it. */
const Envelope = Type.Object({ ...NotificationBody.properties, filters: Type.Optional(Type.Unknown()) }, { additionalProperties: false });
const envelope = compileTwoWay(Envelope);
/** With a template_id, `contents` may come from the template. */
const templated = compileTwoWay(Type.Object({ ...Envelope.properties, contents: Type.Optional(Contents) }, { additionalProperties: false }));

/** The targeting modes, each named by the field that selects it. */
const modes = ['include_external_user_ids', 'include_subscription_ids', 'included_segments', 'filters'] as const;

/** A body the engine takes: its own, the `app_id` it named, and what was taken but ignored. */
export interface AcceptedBody {
  /** Without `contents` only when `template_id` names the template that has them. */
  body: DraftBody;
  template_id: string | null;
  options: NotificationOptions;
  localMinute: number | null;
  app_id: string | null;
  /** OneSignal's token lists, when they are the targeting mode. */
  tokens: TokenTarget | null;
  warnings: NotificationWarning[];
}

/** A notification body whose `contents` may still come from a template. */
export type DraftBody = Omit<NotificationBody, 'contents'> & Partial<Pick<NotificationBody, 'contents'>>;

/** Same shape as the gateway's Checked (gateway/server/checked.ts). */
export type CheckedBody = { ok: true; value: AcceptedBody } | { ok: false; errors: ErrorItem[] };

export function checkNotificationBody(input: unknown): CheckedBody {
  const first = capped(violations(request, input, ''), '');
  if (first.length > 0 || !isObject(input)) return { ok: false, errors: first };
  const translated = fromOneSignal(input);
  const body = translated.body;
  const errors = [...translated.errors, ...capped(violations(translated.template_id === null ? envelope : templated, body, ''), '')];
  if (body['filters'] !== undefined) {
    const filters = checkFilters(body['filters'], '/filters');
    if (!filters.ok) errors.push(...filters.errors);
  }
  errors.push(...targetingErrors(body, translated.tokens?.fields ?? []), ...dataErrors(body['data']), ...personalErrors(body));
  if (errors.length > 0) return { ok: false, errors };
  const { options, localMinute, app_id, template_id, tokens, warnings } = translated;
  return { ok: true, value: { body: body as DraftBody, options, localMinute, app_id, template_id, tokens, warnings } };
}

/** Placeholders the engine would not fill (engine/state/notifications/personal.ts) in `headings` and `contents`, by path. */
export function personalErrors(body: Record<string, unknown>): ErrorItem[] {
  const errors: ErrorItem[] = [];
  for (const field of ['headings', 'contents']) {
    const texts = body[field];
    if (!isObject(texts)) continue;
    for (const [locale, text] of Object.entries(texts)) {
      const error = typeof text === 'string' ? personalTextError(text) : null;
      if (error !== null) errors.push(errorItem(`/${field}/${locale}`, error));
    }
  }
  return errors;
}

/** Exactly one targeting mode; OneSignal's token lists, however many, are one (tokenFields). */
function targetingErrors(body: Record<string, unknown>, tokenFields: readonly string[]): ErrorItem[] {
  const own: string[] = modes.filter((m) => body[m] !== undefined);
  const given = [...own, ...tokenFields];
  const count = own.length + (tokenFields.length > 0 ? 1 : 0);
  const errors: ErrorItem[] = [];
  if (count === 0) errors.push(errorItem('', `exactly one of ${modes.join(', ')} is required`));
  if (count > 1) {
    for (const m of given) errors.push(errorItem(`/${m}`, `only one targeting mode may be given, got ${given.join(' and ')}`));
  }
  if (body['excluded_segments'] !== undefined && body['included_segments'] === undefined) {
    errors.push(errorItem('/excluded_segments', 'needs included_segments'));
  }
  return errors;
}

function dataErrors(data: unknown): ErrorItem[] {
  if (!isObject(data)) return [];
  const limit = `must be at most ${NotificationLimits.data} bytes serialised`;
  // The caller's object as sent; svc_message_id, added later, does not count.
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(data), 'utf8');
  } catch (err) {
    // Nested too deep to serialise (the stack runs out): two bytes a level, far past the limit.
    if (err instanceof RangeError) return [errorItem('/data', limit)];
    throw err;
  }
  return bytes > NotificationLimits.data ? [errorItem('/data', `${limit}, got ${bytes}`)] : [];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
