/**
 * Users' time zones and local times of day (docs/api.md#local-time): a zone is an IANA name
 * (`Europe/Paris`, as the platform's time-zone data knows it) or a fixed offset (`+05:30`, `-0700`,
 * `UTC`); a time of day is OneSignal's `9:00AM` or a 24-hour `21:30`.
 */

const OFFSET = /^(?:UTC|GMT)?([+-])(\d{2}):?(\d{2})$/;
const formatters = new Map<string, Intl.DateTimeFormat>();
/** Zones the formatter cache holds at most: a zone is a user's tag, any string that passed. */
const MAX_ZONES = 1000;

/** True for a zone this module can place: an IANA name or a fixed offset within ±14:00. */
export function isTimeZone(zone: string): boolean {
  if (zone.length === 0 || zone.length > 64) return false;
  const offset = fixedOffsetMinutes(zone);
  if (offset !== undefined) return offset !== null;
  return formatterOf(zone) !== null;
}

/** Minutes after midnight of `9:00AM`, `9:00 pm`, `12:30AM` or `21:30`; null for anything else. */
export function minuteOfDay(text: string): number | null {
  const m = /^(\d{1,2}):(\d{2})\s*(AM|PM)?$/i.exec(text.trim());
  if (!m) return null;
  let hour = Number(m[1]);
  const minute = Number(m[2]);
  const half = m[3]?.toUpperCase();
  if (minute > 59) return null;
  if (half === undefined) return hour <= 23 ? hour * 60 + minute : null;
  if (hour < 1 || hour > 12) return null;
  if (hour === 12) hour = 0;
  return (half === 'PM' ? hour + 12 : hour) * 60 + minute;
}

/**
 * The first instant at or after `from` (ms) when the clock of `zone` shows `minute` after
 * midnight. On a day the clock skips that time (a spring-forward gap), an hour later; on a day it
 * shows it twice, the second time.
 */
export function nextLocalTime(from: number, zone: string, minute: number): number {
  for (let day = -1; day <= 2; day++) {
    const local = localDate(from, zone);
    const wall = Date.UTC(local.year, local.month - 1, local.day + day, 0, minute);
    const at = instantOf(wall, zone);
    if (at >= from) return at;
  }
  // Unreachable for offsets within a day: the wall time recurs every 24 hours.
  return from;
}

/** Offset of `zone` at instant `at`, minutes east of UTC. */
function offsetAt(at: number, zone: string): number {
  const fixed = fixedOffsetMinutes(zone);
  if (fixed !== undefined) return fixed ?? 0;
  const parts = formatterOf(zone)?.formatToParts(at) ?? [];
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour') % 24, get('minute'), get('second'));
  return Math.round((wall - Math.floor(at / 1000) * 1000) / 60_000);
}

/** The instant whose wall-clock time in `zone` is `wall` (wall-clock ms read as if UTC). */
function instantOf(wall: number, zone: string): number {
  let at = wall - offsetAt(wall, zone) * 60_000;
  // A second pass settles a guess taken on the other side of an offset change.
  at = wall - offsetAt(at, zone) * 60_000;
  return at;
}

function localDate(at: number, zone: string): { year: number; month: number; day: number } {
  const shifted = new Date(at + offsetAt(at, zone) * 60_000);
  return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() };
}

/** Minutes of a fixed offset; null for one out of range; undefined when `zone` is not one. */
function fixedOffsetMinutes(zone: string): number | null | undefined {
  if (zone === 'UTC' || zone === 'GMT' || zone === 'Z') return 0;
  const m = OFFSET.exec(zone);
  if (!m) return undefined;
  const minutes = Number(m[2]) * 60 + Number(m[3]);
  if (Number(m[3]) > 59 || minutes > 14 * 60) return null;
  return m[1] === '-' ? -minutes : minutes;
}

function formatterOf(zone: string): Intl.DateTimeFormat | null {
  const cached = formatters.get(zone);
  if (cached !== undefined) return cached;
  let formatter: Intl.DateTimeFormat;
  try {
    formatter = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
  } catch {
    return null;
  }
  if (formatters.size >= MAX_ZONES) formatters.clear();
  formatters.set(zone, formatter);
  return formatter;
}
