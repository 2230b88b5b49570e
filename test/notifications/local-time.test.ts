import t from 'tap';
import { isTimeZone, minuteOfDay, nextLocalTime } from '../../engine/infra/process/local-time.ts';

/** Zones, times of day and the next local time (docs/api.md#local-time), on fixed instants. */

const at = (iso: string): number => Date.parse(iso);
const next = (from: string, zone: string, minute: number): string => new Date(nextLocalTime(at(from), zone, minute)).toISOString();

t.test('times of day in OneSignal spelling and 24-hour', async (t) => {
  const cases: [string, number | null][] = [
    ['9:00AM', 540],
    ['9:00 am', 540],
    ['12:00AM', 0],
    ['12:30PM', 750],
    ['11:59PM', 1439],
    ['21:30', 1290],
    ['0:00', 0],
    ['13:00PM', null],
    ['0:30AM', null],
    ['24:00', null],
    ['9:60AM', null],
    ['nine', null],
  ];
  for (const [text, minute] of cases) t.equal(minuteOfDay(text), minute, text);
});

t.test('zones: IANA names and fixed offsets', async (t) => {
  for (const zone of ['Europe/Paris', 'America/New_York', 'Asia/Kolkata', 'UTC', '+05:30', '-0700', 'GMT+01:00']) t.ok(isTimeZone(zone), zone);
  for (const zone of ['Mars/Olympus', '', '+15:00', '+05:61', 'Europe/Paris; DROP', 'x'.repeat(65)]) t.notOk(isTimeZone(zone), zone);
});

t.test('the next local time: today when still ahead, else tomorrow, in each zone', async (t) => {
  const from = '2026-11-26T14:40:00.000Z';
  t.equal(next(from, 'UTC', 540), '2026-11-27T09:00:00.000Z', 'UTC 9:00 has passed');
  t.equal(next(from, 'America/Los_Angeles', 540), '2026-11-26T17:00:00.000Z', 'Los Angeles (UTC-8) 9:00 is ahead');
  t.equal(next(from, 'America/New_York', 540), '2026-11-27T14:00:00.000Z', 'New York (UTC-5) 9:00 has just passed');
  t.equal(next(from, 'Asia/Tokyo', 540), '2026-11-27T00:00:00.000Z');
  t.equal(next(from, '+05:30', 540), '2026-11-27T03:30:00.000Z');
  t.equal(next(from, '-0700', 540), '2026-11-26T16:00:00.000Z');
  t.equal(next('2026-11-26T14:00:00.000Z', 'America/New_York', 540), '2026-11-26T14:00:00.000Z', 'exactly then: now');
});

t.test('across daylight saving changes', async (t) => {
  t.equal(next('2026-03-07T20:00:00.000Z', 'America/New_York', 540), '2026-03-08T13:00:00.000Z', '9:00 EDT the day clocks go forward');
  t.equal(next('2026-10-31T20:00:00.000Z', 'America/New_York', 540), '2026-11-01T14:00:00.000Z', '9:00 EST the day clocks go back');
  t.equal(next('2026-03-28T12:00:00.000Z', 'Europe/Paris', 150), '2026-03-29T01:30:00.000Z', '2:30 does not exist in Paris that day: an hour later');
});
