import type { QueryParams } from '@clickhouse/client';
import t from 'tap';
import type { ClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { listDeliveries } from '../../engine/infra/clickhouse/deliveries.ts';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { migrate } from '../../engine/infra/clickhouse/migrations.ts';
import type { DeliveryFilter, DeliveryPosition } from '../../schemas/queries.ts';
import { testClickHouse, rows } from '../clickhouse/embedded.ts';
import { BASE, deliveryRow, newestDeliveryFirst, type DeliveryRow } from './fixtures.ts';

// Pages below a cursor or `until` are first read from the day below it (engine/infra/clickhouse/
// deliveries.ts, PAGE_WINDOW_MS) and read again over the whole range when that day holds too few.
// Records here are two per instant, instants 5 hours apart, so a day holds about ten: small pages
// are found in the day, larger ones and filtered ones often need the whole range.
const HOUR = 3_600_000;
const ch = await testClickHouse(t);
await migrate(ch);

const P = 'window';
const spread = (i: number): number => BASE + Math.floor(i / 2) * 5 * HOUR;
const all = Array.from({ length: 120 }, (_, i) => deliveryRow(P, i, { at: spread(i) }));
// Several inserts, so pages span parts.
for (let from = 0; from < all.length; from += 40) await insertRows(ch, 'message_deliveries', all.slice(from, from + 40));

/** Follows the cursor from the first page to the last, calling `between` after each page. */
async function walk(ch: ClickHouse, project: string, filter: DeliveryFilter, limit: number, between: (last: DeliveryPosition) => Promise<void> = async () => {}): Promise<string[]> {
  const seen: string[] = [];
  let after: DeliveryPosition | null = null;
  do {
    const page = await listDeliveries(ch, project, filter, limit, after);
    seen.push(...page.deliveries.map((d) => d.id));
    after = page.next;
    if (after !== null) await between(after);
  } while (after !== null);
  return seen;
}

const expected = (source: DeliveryRow[], match: (r: DeliveryRow) => boolean): string[] => source.filter(match).sort(newestDeliveryFirst).map((r) => r.id);

t.test('walks through records days apart return each record once, in order, for any page size', async (t) => {
  const since = spread(30);
  const until = spread(100);
  const cases: [string, DeliveryFilter, (r: DeliveryRow) => boolean][] = [
    ['no filter', {}, () => true],
    ['status=sent', { status: 'sent' }, (r) => r.status === 'sent'],
    ['status=failed', { status: 'failed' }, (r) => r.status === 'failed'],
    ['channel=PUSH, until', { channel: 'PUSH', until }, (r) => r.channel === 'PUSH' && r.at < until],
    ['since and until', { since, until }, (r) => r.at >= since && r.at < until],
    ['since inside the first day below until', { since: until - 10 * HOUR, until }, (r) => r.at >= until - 10 * HOUR && r.at < until],
  ];
  for (const [name, filter, match] of cases) {
    for (const limit of [1, 3, 9, 10, 25]) t.same(await walk(ch, P, filter, limit), expected(all, match), `${name}, pages of ${limit}`);
  }
});

t.test('a day below the cursor holding the page and its one more row answers; one row short reads the whole range', async (t) => {
  // After the first page of 2 (the newest instant), the day below the cursor holds the next four
  // instants: 8 records. A page of 7 asks for 8 rows, a page of 8 for 9.
  const after = (await listDeliveries(ch, P, {}, 2, null)).next;
  const rest = expected(all, () => true).slice(2);
  for (const limit of [7, 8]) {
    const page = await listDeliveries(ch, P, {}, limit, after);
    t.same(
      page.deliveries.map((d) => d.id),
      rest.slice(0, limit),
      `page of ${limit}`,
    );
    t.equal(page.next?.id, rest[limit - 1], `page of ${limit}: the cursor is its last record`);
  }
});

t.test('records written between pages, inside and below the day of the cursor, are found once', async (t) => {
  const project = 'window-live';
  const initial = Array.from({ length: 40 }, (_, i) => deliveryRow(project, i, { at: spread(i) }));
  await insertRows(ch, 'message_deliveries', initial);
  const want = [...initial];
  let n = 0;
  const walked = await walk(ch, project, {}, 3, async (last) => {
    n++;
    const late = [
      // Newer than the cursor: behind it, never shown.
      deliveryRow(project, 1000 + n, { id: `behind-${n}`, at: last.at + 1 }),
      // Written late inside the day below the cursor, and below that day: both still ahead.
      deliveryRow(project, 2000 + n, { id: `day-${n}`, at: last.at - HOUR }),
      deliveryRow(project, 3000 + n, { id: `older-${n}`, at: last.at - 30 * HOUR }),
    ];
    await insertRows(ch, 'message_deliveries', late);
    want.push(late[1] as DeliveryRow, late[2] as DeliveryRow);
  });
  t.ok(n > 10, `${n} inserts between pages`);
  t.equal(new Set(walked).size, walked.length, 'no record twice');
  t.same(walked, expected(want, () => true), 'every record ahead of the cursor, in order');
});

t.test('every part carries the projection by_user (migration 0009); lookups by user stay exact', async (t) => {
  const parts = await rows<{ name: string; projected: number }>(
    ch,
    "SELECT name, has(groupArray(p.name), 'by_user') AS projected FROM system.parts AS t LEFT JOIN system.projection_parts AS p ON p.parent_name = t.name AND p.table = t.table AND p.active WHERE t.table = 'message_deliveries' AND t.active AND t.database = currentDatabase() GROUP BY t.name",
  );
  t.ok(parts.length > 1, `${parts.length} parts`);
  for (const part of parts) t.equal(Number(part.projected), 1, `part ${part.name}`);
  for (const user of ['u3', 'u7', 'nobody']) t.same(await walk(ch, P, { external_id: user }, 4), expected(all, (r) => r.external_id === user), user);
});

t.test('on a table of many granules a page of one user is read from by_user (and equals the table read), other pages from the table', async (t) => {
  const M = 'many';
  // 60 000 records of 500 users over 60 000 s, in three inserts (parts of about three granules).
  for (let from = 0; from < 60_000; from += 20_000) {
    await ch.command({
      query: `INSERT INTO message_deliveries (project, id, stream_id, notification_id, external_id, channel, attempt, status, retrying, at)
        SELECT {p:String}, concat('d', toString(number)), concat(toString(number), '-0'), 'n', concat('m', toString(number % 500)), 'PUSH', 1, 'sent', false,
          fromUnixTimestamp64Milli(toInt64({base:Int64} + number * 1000), 'UTC')
        FROM numbers({from:UInt64}, 20000)`,
      query_params: { p: M, base: BASE, from },
    });
  }
  // The plan of the page query listDeliveries sends (the first one it asks; the receipts follow).
  const plan = async (filter: DeliveryFilter): Promise<string[]> => {
    const sent: QueryParams[] = [];
    const spy = new Proxy(ch, {
      get: (target, key) => (key === 'query' ? (params: QueryParams) => (sent.push(params), target.query(params)) : Reflect.get(target, key)),
    });
    await listDeliveries(spy, M, filter, 10, null);
    const [page] = sent;
    if (!page) throw new Error('no query sent');
    const lines = await rows<{ explain: string }>(ch, `EXPLAIN projections = 1 ${page.query}`, page.query_params);
    return lines.map((l) => l.explain.trim());
  };
  const reads = (lines: string[]): string[] => lines.flatMap((l) => /ReadFromMergeTree \((?:\w+\.)?(.+)\)/.exec(l)?.[1] ?? []);
  t.same(reads(await plan({ external_id: 'm42' })), ['by_user'], 'one user: the projection');
  const other = await plan({ status: 'sent' });
  t.same(reads(other), ['message_deliveries'], 'other pages: the table');
  // ClickHouse picks a projection by the marks it would read, and by_user may read one fewer
  // than the table for a whole project: other pages keep it out of the choice altogether.
  t.notOk(other.some((l) => l.includes('by_user')), 'other pages: by_user not even considered');
  const table = await rows<{ id: string }>(
    ch,
    "SELECT id FROM message_deliveries WHERE project = {p:String} AND external_id = 'm42' ORDER BY at DESC, id DESC SETTINGS optimize_use_projections = 0",
    { p: M },
  );
  t.equal(table.length, 120);
  t.same(await walk(ch, M, { external_id: 'm42' }, 11), table.map((r) => r.id), 'every record of the user, newest first, across pages');
});
