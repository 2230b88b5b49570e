import { errorItem } from '../../infra/validation/ajv-errors.ts';
import { CallerError } from '../../../schemas/errors.ts';

/**
 * `send_after` as OneSignal documents it, rewritten as the RFC 3339 date-time the body's schema
 * checks (docs/api.md#moving-from-onesignal): RFC 1123 (`Thu, 24 Sep 2015 14:00:00 GMT`),
 * `2015-09-24 14:00:00 GMT-0700`, and JavaScript's `Thu Sep 24 2015 14:00:00 GMT-0700 (PDT)`.
 * Any other text is returned as it is, for the schema to take (RFC 3339) or refuse.
 */
export function sendAfterText(text: string): string {
  const rfc1123 = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{1,2}) ([A-Z][a-z]{2,3}) (\d{4}) (\d{2}:\d{2}:\d{2}) (GMT|UTC|[+-]\d{4})$/.exec(text);
  if (rfc1123) return iso(rfc1123[3], monthOf(rfc1123[2]), rfc1123[1], rfc1123[4], rfc1123[5]);
  const dashed = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}:\d{2}:\d{2}) (?:GMT|UTC)([+-]\d{4})?$/.exec(text);
  if (dashed) return iso(dashed[1], dashed[2], dashed[3], dashed[4], dashed[5]);
  const spelled = /^(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? )?([A-Z][a-z]{2,3}) (\d{1,2}),? (\d{4}) (\d{2}:\d{2}:\d{2}) (?:GMT|UTC)([+-]\d{4})?(?: \([^)]*\))?$/.exec(text);
  if (spelled) return iso(spelled[3], monthOf(spelled[1]), spelled[2], spelled[4], spelled[5]);
  return text;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `01` to `12`, or `00` for a name that is no month (the schema then refuses the date). */
function monthOf(name: string | undefined): string {
  const index = MONTHS.indexOf(name === 'Sept' ? 'Sep' : (name ?? ''));
  return String(index + 1).padStart(2, '0');
}

function iso(year = '', month = '', day = '', time = '', zone: string | undefined): string {
  const offset = zone === undefined || zone === 'GMT' || zone === 'UTC' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  return `${year}-${month}-${day.padStart(2, '0')}T${time}${offset}`;
}

/**
 * send_after in ms, when the notification is scheduled. A leap second (`:60`, valid RFC 3339 that
 * JavaScript cannot place) is the first instant of the next minute, as body timestamps of the SDK
 * routes (gateway/ingest/entries.ts). A time outside the years 0000 to 9999 is a 400.
 */
export function sendAfterTime(text: string): number {
  let ms = Date.parse(text);
  if (!Number.isFinite(ms)) ms = Date.parse(text.replace(/(T\d{2}:\d{2}):60/i, '$1:59')) + 1000;
  // An offset can carry a date past the years an ISO 8601 answer can name (GET send_after).
  if (!(ms >= firstInstant && ms <= lastInstant)) {
    throw new CallerError('validation_failed', [errorItem('/send_after', 'must be within the years 0000 to 9999 in UTC')]);
  }
  return ms;
}

const firstInstant = Date.parse('0000-01-01T00:00:00.000Z');
const lastInstant = Date.parse('9999-12-31T23:59:59.999Z');
