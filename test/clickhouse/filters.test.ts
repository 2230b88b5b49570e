import t from 'tap';
import { checkFilters } from '../../engine/infra/clickhouse/filters/check.ts';
import { compileFilters, type CompiledFilters } from '../../engine/infra/clickhouse/filters/compile.ts';
import { countAudience, streamAudience } from '../../engine/infra/clickhouse/filters/stream.ts';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { migrate } from '../../engine/infra/clickhouse/migrations.ts';
import { allAudience } from '../../engine/state/segments/audience.ts';
import { testClickHouse, rows } from './embedded.ts';

const ch = await testClickHouse(t);
const now = Date.parse('2026-11-22T12:00:00.000Z');
const hoursAgo = (h: number): string => new Date(now - h * 3_600_000).toISOString().replace('T', ' ').replace('Z', '');

type Tags = Record<string, string | number>;
/** A users-mirror row as the recorder writes it: every tag as text, number tags also in tag_numbers. */
function user(project: string, id: string, version: number, tags: Tags, subscriptions: string[] = []): Record<string, unknown> {
  const numbers = Object.fromEntries(Object.entries(tags).filter((e): e is [string, number] => typeof e[1] === 'number'));
  return {
    project,
    external_id: id,
    tags: Object.fromEntries(Object.entries(tags).map(([k, v]) => [k, String(v)])),
    tag_numbers: numbers,
    subscription_types: subscriptions,
    opted_out: [],
    created_at: hoursAgo(1000),
    updated_at: hoursAgo(1000 - version),
    version,
    stream_id: `${version}-0`,
  };
}
let eventSeq = 0;
const event = (project: string, id: string, name: string, hours: number) => ({
  project,
  external_id: id,
  name,
  properties: '{}',
  idempotency_key: null,
  stream_id: `${++eventSeq}-0`,
  at: hoursAgo(hours),
});

const injection = "x' OR 1=1 --";
const oddKey = "a'b{c}";

t.before(async () => {
  await migrate(ch);
  // Two inserts, so older and newer versions sit in separate, unmerged parts. u2's newest version
  // (3) lands first; its older version 2 arrives later and must not win.
  await insertRows(ch, 'users', [
    user('p1', 'u1', 1, { plan: 'silver' }),
    user('p1', 'u2', 3, { level: 9, plan: 'silver' }, ['ANDROID_PUSH']),
    user('p1', 'u3', 1, { level: '10', plan: 'gold' }),
    user('p1', 'u4', 1, { score: 2.5, plan: injection }, ['EMAIL']),
    user('p1', 'u5', 1, { plan: 'gold', level: 100 }, ['SMS']),
    user('p1', 'u6', 1, { plan: 'silver' }),
    user('p1', 'u7', 1, { level: 'abc', name: 'amy' }, ['WEB_PUSH']),
    user('p2', 'u1', 1, { plan: 'gold', level: 10 }, ['EMAIL']),
    user('p2', 'u7', 1, { plan: 'gold' }),
  ]);
  await insertRows(ch, 'users', [
    user('p1', 'u1', 2, { level: 10, plan: 'gold', [oddKey]: 'x' }, ['IOS_PUSH', 'EMAIL']),
    user('p1', 'u2', 2, { level: 50, plan: 'gold' }, ['SMS']),
    user('p1', 'u5', 2, {}, ['SMS']),
    user('p1', 'u6', 2, { level: -3, plan: 'gold', name: 'zed' }, ['EMAIL']),
  ]);
  await insertRows(ch, 'events', [
    event('p1', 'u1', 'purchase', 1),
    event('p1', 'u1', 'purchase', 2),
    event('p1', 'u1', 'purchase', 30),
    event('p1', 'u2', 'purchase', 5),
    event('p1', 'u3', 'login', 1),
    event('p1', 'u6', 'purchase', 100),
    // Another project's events never count for p1.
    event('p2', 'u7', 'purchase', 1),
    event('p2', 'u7', 'purchase', 1.5),
  ]);
});

/** Checks and compiles filters that the test means to be valid. */
function compiled(project: string, filters: unknown[]): CompiledFilters {
  const checked = checkFilters(filters);
  if (!checked.ok) throw new Error(`invalid filters: ${JSON.stringify(checked.errors)}`);
  return compileFilters(project, checked.value, now);
}

/** The sorted external_ids matched by `filters` in `project`, read through streamAudience in small chunks. */
async function audience(filters: unknown[], project = 'p1'): Promise<string[]> {
  const query = compiled(project, filters);
  const ids: string[] = [];
  await streamAudience(ch, query, (chunk) => void ids.push(...chunk), 3);
  const count = await countAudience(ch, query);
  if (count !== ids.length) throw new Error(`count ${count} but ${ids.length} streamed for ${JSON.stringify(filters)}`);
  return ids.sort();
}

const tag = (key: string, relation: string, value?: unknown) => ({ field: 'tag', key, relation, ...(value === undefined ? {} : { value }) });
const OR = { operator: 'OR' };

t.test('the newest version of each user decides, whatever the insert order', async (t) => {
  t.same(await audience([tag('plan', '=', 'gold')]), ['u1', 'u3', 'u6'], 'u5 and u2 were gold only in other versions');
  t.same(await audience([tag('plan', '=', 'gold')], 'p2'), ['u1', 'u7'], 'another project has its own users');
});

t.test('= and != ; != also matches users without the tag', async (t) => {
  t.same(await audience([tag('plan', '!=', 'gold')]), ['u2', 'u4', 'u5', 'u7']);
  t.same(await audience([tag('level', '=', 10)]), ['u1', 'u3'], 'a number matches the number tag and the text "10"');
  t.same(await audience([tag('level', '=', '10.0')]), ['u1'], 'a numeric string matches a number tag as a number');
  t.same(await audience([tag('score', '=', 2.5)]), ['u4']);
  t.same(await audience([tag('level', '!=', 10)]), ['u2', 'u4', 'u5', 'u6', 'u7']);
});

t.test('> and < compare number tags as numbers and text tags as text', async (t) => {
  // u1 has the number 10 (10 > 9); u3 the text "10" ("10" < "9" as text); u7 "abc" > "9" as text.
  t.same(await audience([tag('level', '>', 9)]), ['u1', 'u7']);
  t.same(await audience([tag('level', '>', '9')]), ['u1', 'u7'], 'a numeric string is a number');
  t.same(await audience([tag('level', '<', 10)]), ['u2', 'u6'], 'negative numbers too');
  t.same(await audience([tag('level', '<', '10')]), ['u2', 'u6']);
  t.same(await audience([tag('score', '>', 2)]), ['u4']);
  t.same(await audience([tag('score', '<', '2.50')]), []);
  t.same(await audience([tag('name', '>', 'b')]), ['u6'], 'text against text');
  t.same(await audience([tag('level', '>', 'a')]), ['u7'], 'a text value compares every tag as text');
});

t.test('regression: numbers past 2^53 (1e20, 1.5e300, -1e300) compare exactly instead of failing the query', async (t) => {
  const numbers = { big: 1e20, huge: 1.5e300, negative: -1e300, edge: 2 ** 53 + 2, max: Number.MAX_VALUE, small: 5 };
  await insertRows(ch, 'users', Object.entries(numbers).map(([id, n]) => user('p3', id, 1, { n })));
  const all = Object.keys(numbers).sort();
  const except = (...ids: string[]) => all.filter((id) => !ids.includes(id));
  t.same(await audience([tag('n', '=', 1e20)], 'p3'), ['big']);
  t.same(await audience([tag('n', '!=', 1e20)], 'p3'), except('big'));
  t.same(await audience([tag('n', '>', 1e20)], 'p3'), ['huge', 'max']);
  t.same(await audience([tag('n', '<', -1e299)], 'p3'), ['negative']);
  t.same(await audience([tag('n', '>', 2 ** 53)], 'p3'), ['big', 'edge', 'huge', 'max'], '2^53 itself is past the safe integers');
  t.same(await audience([tag('n', '=', 2 ** 53 + 2)], 'p3'), ['edge'], 'not its neighbour 2^53');
  t.same(await audience([tag('n', '<', Number.MAX_VALUE)], 'p3'), except('max'));
  t.same(await audience([tag('n', 'in', [1e20, -1e300, 7])], 'p3'), ['big', 'negative']);
  t.same(await audience([tag('n', '=', '1.5e300')], 'p3'), ['huge'], 'a numeric string past 2^53 too');
  t.same(await audience([tag('n', '>', '1e400')], 'p3'), ['edge', 'small'], 'text past the doubles is no number: every tag compares as text');
});

t.test('exists, not_exists and in', async (t) => {
  t.same(await audience([tag('level', 'exists')]), ['u1', 'u2', 'u3', 'u6', 'u7']);
  t.same(await audience([tag('level', 'not_exists')]), ['u4', 'u5']);
  t.same(await audience([tag('plan', 'in', ['gold', 'silver'])]), ['u1', 'u2', 'u3', 'u6']);
  t.same(await audience([tag('level', 'in', [9, '10'])]), ['u1', 'u2', 'u3']);
  t.same(await audience([tag('level', 'in', [-3.0])]), ['u6']);
  t.same(await audience([tag('level', 'in', ['nope'])]), []);
});

t.test('subscription type', async (t) => {
  t.same(await audience([{ field: 'subscription', type: 'EMAIL' }]), ['u1', 'u4', 'u6']);
  t.same(await audience([{ field: 'subscription', type: 'IOS_PUSH' }]), ['u1']);
  t.same(await audience([{ field: 'subscription', type: 'SMS' }]), ['u5'], "u2's older version had SMS");
});

t.test('event performed / not performed within H hours at least C times', async (t) => {
  const ev = (relation: string, extra: object = {}) => ({ field: 'event', name: 'purchase', relation, ...extra });
  t.same(await audience([ev('performed', { within_hours: 24 })]), ['u1', 'u2']);
  t.same(await audience([ev('performed', { within_hours: 24, min_count: 2 })]), ['u1']);
  t.same(await audience([ev('performed', { within_hours: 48, min_count: 3 })]), ['u1']);
  t.same(await audience([ev('performed', { within_hours: 4 })]), ['u1']);
  t.same(await audience([ev('performed')]), ['u1', 'u2', 'u6'], 'no window: ever');
  t.same(await audience([ev('not_performed', { within_hours: 24 })]), ['u3', 'u4', 'u5', 'u6', 'u7'], 'users without events included');
  t.same(await audience([ev('not_performed', { within_hours: 24, min_count: 2 })]), ['u2', 'u3', 'u4', 'u5', 'u6', 'u7']);
  t.same(await audience([{ field: 'event', name: 'login', relation: 'performed', within_hours: 2 }]), ['u3']);
  t.same(await audience([ev('performed', { within_hours: 24 })], 'p2'), ['u7'], "p2's events count in p2 only");
});

t.test('AND within a group, OR between groups, AND binding tighter', async (t) => {
  const email = { field: 'subscription', type: 'EMAIL' };
  const sms = { field: 'subscription', type: 'SMS' };
  t.same(await audience([tag('plan', '=', 'gold'), email]), ['u1', 'u6']);
  t.same(await audience([tag('plan', '=', 'gold'), tag('level', 'exists'), OR, sms]), ['u1', 'u3', 'u5', 'u6']);
  // sms OR (gold AND level < 10) = {u5} + {u6}; read as (sms OR gold) AND level < 10 it would be {u6}.
  t.same(await audience([sms, OR, tag('plan', '=', 'gold'), tag('level', '<', 10)]), ['u5', 'u6']);
  t.same(
    await audience([{ field: 'event', name: 'purchase', relation: 'performed', within_hours: 24 }, OR, { field: 'subscription', type: 'WEB_PUSH' }]),
    ['u1', 'u2', 'u7'],
  );
  t.same(await audience([tag('plan', '=', 'gold'), OR, tag('plan', '=', 'silver'), OR, tag('score', 'exists')]), ['u1', 'u2', 'u3', 'u4', 'u6']);
});

t.test('injection attempts in keys and values are inert', async (t) => {
  t.same(await audience([tag('plan', '=', injection)]), ['u4'], 'the hostile text is matched as plain text');
  t.same(await audience([tag('plan', '=', "gold' OR '1'='1")]), []);
  t.same(await audience([tag(oddKey, 'exists')]), ['u1'], 'quotes and braces in a key');
  t.same(await audience([tag("plan') OR 1=1 --", 'exists')]), []);
  t.same(await audience([tag('plan', 'in', ["'); DROP TABLE users; --", '{project:String}'])]), []);
  t.same(await audience([{ field: 'event', name: "purchase' OR 1=1 --", relation: 'performed' }]), []);
  const query = compiled('p1', [tag('plan', '=', injection)]);
  t.notOk(query.query.includes(injection) || query.count.includes("x'"), 'values never reach the SQL text');
  const [table] = await rows<{ n: string }>(ch, "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'users'");
  t.equal(Number(table?.n), 1, 'users table still exists');
});

t.test('invalid filters list every problem, naming the entry', async (t) => {
  const paths = (value: unknown) => {
    const r = checkFilters(value);
    return r.ok ? [] : r.errors.map((e) => e.path);
  };
  t.same(paths({}), ['/filters']);
  t.same(paths([]), ['/filters']);
  t.same(paths([OR, tag('a', 'exists')]), ['/filters/0'], 'OR first');
  t.same(paths([tag('a', 'exists'), OR]), ['/filters/1'], 'OR last');
  t.same(paths([tag('a', 'exists'), OR, OR, tag('b', 'exists')]), ['/filters/2'], 'OR doubled');
  t.same(paths([tag('a', 'exists'), { operator: 'AND' }, tag('b', 'exists')]), ['/filters/1/operator']);
  t.same(paths([tag('a', 'exists'), tag('a', 'like', 'x')]), ['/filters/1/relation']);
  t.same(paths([tag('a', 'in', 'x')]), ['/filters/0/value'], 'in without an array');
  t.same(paths([tag('a', 'in', Array.from({ length: 101 }, (_, i) => i))]), ['/filters/0/value'], 'in with 101 values');
  t.same(paths([tag('a', '=')]), ['/filters/0/value'], '= without a value');
  t.same(paths([tag('a', '>', { x: 1 })]), ['/filters/0/value']);
  t.same(paths([tag('', 'exists')]), ['/filters/0/key']);
  t.same(paths([{ field: 'device' }, 'x', { field: 'subscription', type: 'FAX' }]), ['/filters/0/field', '/filters/1', '/filters/2/type']);
  t.same(paths([{ field: 'event', relation: 'performed', within_hours: 0 }]), ['/filters/0/name', '/filters/0/within_hours']);
  const r = checkFilters([tag('a', 'exists'), tag('a', 'like', 'x')]);
  t.match(r, { ok: false, errors: [{ code: 'validation_failed', message: /^filters\/1\/relation: must be one of/ }] });
  t.same(paths(Array.from({ length: 201 }, () => tag('a', 'exists'))), ['/filters'], '201 entries');
  t.match(checkFilters([tag('a', 'exists')], '/body/filters'), { ok: true }, 'a valid list passes with any prefix');
});

t.test('a list with many bad entries lists the first 100 errors and how many entries failed', async (t) => {
  const r = checkFilters(Array.from({ length: 200 }, (_, i) => tag(`k${i}`, '>', [])));
  t.equal(r.ok, false);
  if (r.ok) return;
  t.equal(r.errors.length, 101);
  t.same(r.errors[99]?.path, '/filters/99/value');
  t.same(r.errors[100], { code: 'validation_failed', message: 'filters: 200 entries failed; only the first 100 errors are listed', path: '/filters' });
  const huge = checkFilters([tag('a', 'in', Array.from({ length: 100_000 }, () => []))]);
  t.same(huge, { ok: false, errors: [{ code: 'validation_failed', message: 'filters/0/value: must NOT have more than 100 items', path: '/filters/0/value' }] }, 'an in list far over its limit: the first error only');
});

t.test('200 entries are accepted, compiled and run', async (t) => {
  // 100 conditions with 99 ORs between them, plus one last condition: 199 + ... = 200 entries.
  const filters: unknown[] = [];
  for (let i = 0; i < 100; i++) filters.push(...(i === 0 ? [] : [OR]), tag(`k${i}`, '=', i));
  filters.push(tag('plan', 'exists'));
  t.equal(filters.length, 200);
  t.same(await audience(filters), [], 'no user has any k<i> tag');
  filters[0] = tag('level', 'exists');
  t.same(await audience(filters), ['u1', 'u2', 'u3', 'u6', 'u7']);
});

t.test('streaming yields every id once across chunks, and the count agrees', async (t) => {
  const total = 1000;
  const users = Array.from({ length: total }, (_, i) => user('big', `id${String(i).padStart(4, '0')}`, 1, { n: i }, ['EMAIL']));
  await insertRows(ch, 'users', users);
  const query = compiled('big', [tag('n', '<', 700), tag('n', '>', '99')]);
  const seen: string[] = [];
  const sizes: number[] = [];
  const streamed = await streamAudience(ch, query, async (chunk) => {
    sizes.push(chunk.length);
    seen.push(...chunk);
  }, 128);
  const expected = Array.from({ length: 600 }, (_, i) => `id${String(i + 100).padStart(4, '0')}`);
  t.same(seen, expected, 'ids 100..699 (numeric order of n: "99" < n < 700), each once, in order');
  t.equal(streamed, 600);
  t.ok(sizes.every((s) => s <= 128 && s > 0), 'no chunk over the size, and none empty');
  t.equal(await countAudience(ch, query), streamed, 'count equals the number streamed');
  let exact = 0;
  await streamAudience(ch, compiled('big', [tag('n', 'exists')]), (c) => void (exact += c.length), 500);
  t.equal(exact, total, 'an audience that is an exact multiple of the chunk size ends cleanly');
});

t.test('ranges of the sort key: every match once, in order, over unmerged versions, resumed anywhere', async (t) => {
  // Three inserts, three parts: every third user loses their subscriptions in version 2, every
  // fifth changes tag n, and version 3 gives every seventh their subscriptions back.
  const total = 2000;
  const id = (i: number): string => `r${String(i).padStart(5, '0')}`;
  const n = (i: number): number => (i % 5 === 0 ? i + 5000 : i);
  const reachable = (i: number): boolean => i % 3 !== 0 || i % 7 === 0;
  await insertRows(ch, 'users', Array.from({ length: total }, (_, i) => user('ranged', id(i), 1, { n: i }, ['EMAIL'])));
  await insertRows(ch, 'users', Array.from({ length: total }, (_, i) => i).filter((i) => i % 3 === 0 || i % 5 === 0).map((i) => user('ranged', id(i), 2, { n: n(i) }, i % 3 === 0 ? [] : ['EMAIL'])));
  await insertRows(ch, 'users', Array.from({ length: total }, (_, i) => i).filter((i) => i % 21 === 0).map((i) => user('ranged', id(i), 3, { n: n(i) }, ['EMAIL'])));
  const all = allAudience('ranged');
  t.ok(all.ranges, 'All is read in ranges');
  const audiences: [string, CompiledFilters, (i: number) => boolean, number][] = [
    ['All', all, reachable, 50],
    ['n < 1000 with a subscription (dense, then none past id 1000)', compiled('ranged', [tag('n', '<', 1000), { field: 'subscription', type: 'EMAIL' }]), (i) => n(i) < 1000 && reachable(i), 64],
    ['n over 6000 (one user in five past 1000: ranges widen)', compiled('ranged', [tag('n', '>', 6000)]), (i) => n(i) > 6000, 16],
  ];
  for (const [what, query, matches, size] of audiences) {
    const expected = Array.from({ length: total }, (_, i) => i).filter(matches).map(id);
    const seen: string[] = [];
    const sizes: number[] = [];
    const streamed = await streamAudience(ch, query, (chunk) => {
      sizes.push(chunk.length);
      seen.push(...chunk);
    }, size);
    t.same(seen, expected, `${what}: the newest version decides, each id once, in order`);
    t.equal(streamed, expected.length, `${what}: the count passed on`);
    t.ok(sizes.every((s) => s > 0 && s <= size), `${what}: chunks of 1 to ${size} ids`);
    t.equal(await countAudience(ch, query), expected.length, `${what}: the count query agrees`);
    const from = expected[Math.floor(expected.length / 2)] ?? '';
    const resumed: string[] = [];
    await streamAudience(ch, query, (chunk) => void resumed.push(...chunk), size, from);
    t.same(resumed, expected.filter((e) => e > from), `${what}: a read resumed after ${from} goes on from there`);
  }
});
