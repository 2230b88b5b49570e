import t from 'tap';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { streamAudience } from '../../engine/infra/clickhouse/filters/stream.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { resolveSegment } from '../../engine/state/segments/audience.ts';
import { SegmentStore } from '../../engine/state/segments/store.ts';
import { call } from '../helpers/http.ts';
import { inProcessGateway, type InProcess } from '../helpers/in-process.ts';

let gw: InProcess;
let other: CreatedProject;
const base = Date.parse('2026-11-01T00:00:00.000Z');

type Tags = Record<string, string | number>;
/** A users-mirror row as the recorder writes it: every tag as text, number tags also in tag_numbers. */
function user(project: string, id: string, version: number, tags: Tags, subscriptions: string[]): Record<string, unknown> {
  return {
    project,
    external_id: id,
    tags: Object.fromEntries(Object.entries(tags).map(([k, v]) => [k, String(v)])),
    tag_numbers: Object.fromEntries(Object.entries(tags).filter((e): e is [string, number] => typeof e[1] === 'number')),
    subscription_types: subscriptions,
    opted_out: [],
    created_at: base,
    updated_at: base + version,
    version,
    stream_id: `${version}-0`,
  };
}

t.before(async () => {
  gw = await inProcessGateway(t);
  other = await new Keystore(gw.redis, gw.topology).createProject('other', false);
  const p = gw.project.project_id;
  const q = other.project_id;
  // Two inserts, so newer and older versions sit in separate, unmerged parts: b's and d's older
  // versions arrive after their newest ones and must not win.
  await insertRows(gw.clickhouse, 'users', [
    user(p, 'a', 1, { plan: 'gold', level: 10 }, ['EMAIL']),
    user(p, 'b', 2, { plan: 'gold', level: 3 }, ['IOS_PUSH']),
    user(p, 'c', 1, { plan: 'gold', level: 7 }, []),
    user(p, 'd', 2, { plan: 'gold' }, []),
    user(q, 'x', 1, { plan: 'gold' }, ['SMS']),
  ]);
  await insertRows(gw.clickhouse, 'users', [
    user(p, 'b', 1, { plan: 'silver', level: 3 }, ['IOS_PUSH']),
    user(p, 'd', 1, { plan: 'silver' }, ['EMAIL']),
    user(p, 'e', 1, { level: 20 }, ['SMS', 'EMAIL']),
  ]);
});

const gold = [{ field: 'tag', key: 'plan', relation: '=', value: 'gold' }];
// (gold AND level > 5) OR a live EMAIL subscription.
const goldHighOrEmail = [...gold, { field: 'tag', key: 'level', relation: '>', value: 5 }, { operator: 'OR' }, { field: 'subscription', type: 'EMAIL' }];

async function count(key: string, name: string): Promise<unknown> {
  const answer = await call(`${gw.url}/api/segments/${encodeURIComponent(name)}/count`, 'GET', key);
  return answer.status === 200 ? answer.body : answer;
}

t.test('count is the current size of a segment, judged on each newest user version', async (t) => {
  const rest = gw.project.rest_key;
  for (const [name, filters] of [
    ['gold', gold],
    ['gold high or email', goldHighOrEmail],
  ] as const) {
    t.equal((await call(`${gw.url}/api/segments`, 'POST', rest, { name, filters })).status, 201, name);
  }
  t.same(await count(rest, 'gold'), { name: 'gold', count: 4 }, 'a, b, c, d (b newly gold; d still gold)');
  t.same(await count(rest, 'gold high or email'), { name: 'gold high or email', count: 3 }, 'a and c by level, e by EMAIL; not d, whose EMAIL is gone');
  t.same(await count(rest, 'All'), { name: 'All', count: 3 }, 'a, b, e: not c (never subscribed), not d (newest version lost it)');

  await insertRows(gw.clickhouse, 'users', [user(gw.project.project_id, 'e', 2, { level: 20, plan: 'gold' }, [])]);
  t.same(await count(rest, 'gold'), { name: 'gold', count: 5 }, 'counted now, not when the segment was made');
  t.same(await count(rest, 'All'), { name: 'All', count: 2 }, 'e lost its subscriptions');
});

t.test("counts are per project: another project's segment of the same name counts its own users", async (t) => {
  t.equal((await call(`${gw.url}/api/segments`, 'POST', other.rest_key, { name: 'gold', filters: [{ field: 'subscription', type: 'SMS' }] })).status, 201);
  t.same(await count(other.rest_key, 'gold'), { name: 'gold', count: 1 });
  t.same(await count(other.rest_key, 'All'), { name: 'All', count: 1 });
  t.same(await count(gw.project.rest_key, 'gold'), { name: 'gold', count: 5 }, 'ours is unchanged');
});

t.test('resolveSegment gives the fan-out the audience of a name: All, a stored segment, or null', async (t) => {
  const store = new SegmentStore(gw.redis, gw.topology);
  const ids = async (name: string): Promise<string[] | null> => {
    const compiled = await resolveSegment(store, gw.project.project_id, name);
    if (compiled === null) return null;
    const found: string[] = [];
    await streamAudience(gw.clickhouse, compiled, (chunk) => void found.push(...chunk), 1);
    return found;
  };
  t.same(await ids('All'), ['a', 'b']);
  t.same(await ids('gold high or email'), ['a', 'c', 'e'], 'e: now gold with level 20');
  t.equal(await ids('nobody'), null);
});

t.test('regression: a segment with a number past 2^53 is counted (it was created 201, then every count was 503)', async (t) => {
  const numbers = await new Keystore(gw.redis, gw.topology).createProject('numbers', false);
  await insertRows(gw.clickhouse, 'users', [
    user(numbers.project_id, 'big', 1, { n: 1e20 }, ['EMAIL']),
    user(numbers.project_id, 'huge', 1, { n: 1.5e300 }, ['EMAIL']),
    user(numbers.project_id, 'negative', 1, { n: -1e300 }, ['EMAIL']),
    user(numbers.project_id, 'small', 1, { n: 5 }, ['EMAIL']),
  ]);
  const segments: [string, unknown, number][] = [
    ['is 1e20', 1e20, 1],
    ['past 1.5e300', 1.5e300, 0],
    ['past -1e300', -1e300, 3],
  ];
  for (const [name, value, expected] of segments) {
    const relation = name.startsWith('past') ? '>' : '=';
    const created = await call(`${gw.url}/api/segments`, 'POST', numbers.rest_key, { name, filters: [{ field: 'tag', key: 'n', relation, value }] });
    t.equal(created.status, 201, `${name}: created`);
    t.same(await count(numbers.rest_key, name), { name, count: expected }, `${name}: counted`);
  }
  const inList = await call(`${gw.url}/api/segments`, 'POST', numbers.rest_key, { name: 'in', filters: [{ field: 'tag', key: 'n', relation: 'in', value: [1e20, -1e300] }] });
  t.equal(inList.status, 201);
  t.same(await count(numbers.rest_key, 'in'), { name: 'in', count: 2 });
});

// Last: it closes the process's ClickHouse.
t.test('count answers 503 with Retry-After when ClickHouse fails', async (t) => {
  await gw.store.close();
  for (const name of ['All', 'gold']) {
    const answer = await call(`${gw.url}/api/segments/${name}/count`, 'GET', gw.project.rest_key);
    t.same([answer.status, answer.headers.get('retry-after'), answer.body], [503, '1', { errors: [{ code: 'unavailable', message: 'The service cannot meet this call now.' }] }], name);
  }
  t.equal((await call(`${gw.url}/api/segments/nobody/count`, 'GET', gw.project.rest_key)).status, 404, 'an unknown name is still 404');
});
