import t from 'tap';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { call } from '../helpers/http.ts';
import { inProcessGateway, type InProcess } from '../helpers/in-process.ts';
import { ProjectKeys } from '../../engine/state/keys/redis-keys.ts';

let gw: InProcess;
/** A second project of the same deployment. */
let other: CreatedProject;
t.before(async () => {
  gw = await inProcessGateway(t);
  other = await new Keystore(gw.redis, gw.topology).createProject('other', false);
});

const gold = [{ field: 'tag', key: 'plan', relation: '=', value: 'gold' }];
const emailOrSms = [{ field: 'subscription', type: 'EMAIL' }, { operator: 'OR' }, { field: 'subscription', type: 'SMS' }];
const url = (name?: string, suffix = ''): string => `${gw.url}/api/segments${name === undefined ? '' : `/${encodeURIComponent(name)}`}${suffix}`;
const rest = (): string => gw.project.rest_key;
const isoNow = (from: number, to: number) => (value: unknown) => typeof value === 'string' && Date.parse(value) >= from && Date.parse(value) <= to && new Date(value).toISOString() === value;

async function allBody(project: string): Promise<{ name: string; filters: unknown[]; created_at: string }> {
  const created = await gw.redis.hget(gw.topology.own(ProjectKeys).project(project), 'created_at');
  if (created === null) throw new Error('project without created_at');
  return { name: 'All', filters: [], created_at: created };
}

t.test('create, read, list and delete round trip', async (t) => {
  const before = Date.now();
  const created = await call(url(), 'POST', rest(), { name: 'gold users', filters: gold });
  t.equal(created.status, 201);
  const body = created.body as { name: string; filters: unknown; created_at: string };
  t.same(Object.keys(body).sort(), ['created_at', 'filters', 'name']);
  t.same([body.name, body.filters], ['gold users', gold]);
  t.ok(isoNow(before, Date.now())(body.created_at), 'created_at is ISO 8601 of the creation time');

  const read = await call(url('gold users'), 'GET', rest());
  t.same([read.status, read.body], [200, body], 'GET answers the stored body (percent-decoded name)');

  t.equal((await call(url(), 'POST', rest(), { name: 'a b/c', filters: emailOrSms })).status, 201);
  t.equal((await call(url(), 'POST', rest(), { name: 'Zeta', filters: gold })).status, 201);
  const list = await call(url(), 'GET', rest());
  t.equal(list.status, 200);
  const segments = (list.body as { segments: { name: string; created_at: string }[] }).segments;
  t.same(
    segments.map((s) => s.name),
    ['All', 'Zeta', 'a b/c', 'gold users'],
    'All included, sorted by name in code-unit order',
  );
  t.same(segments[0], await allBody(gw.project.project_id), 'All: no filters, the project creation time');
  t.same(segments[3], body);
  t.same((await call(url('a b/c'), 'GET', rest())).body, { name: 'a b/c', filters: emailOrSms, created_at: segments[2]?.created_at });

  const deleted = await call(url('gold users'), 'DELETE', rest());
  t.same([deleted.status, deleted.body], [200, body], 'DELETE answers the deleted body');
  t.equal((await call(url('gold users'), 'GET', rest())).status, 404);
  const again = await call(url('gold users'), 'DELETE', rest());
  t.same([again.status, again.body], [404, { errors: [{ code: 'not_found', message: 'Not found.' }] }]);
  t.same(
    ((await call(url(), 'GET', rest())).body as { segments: { name: string }[] }).segments.map((s) => s.name),
    ['All', 'Zeta', 'a b/c'],
  );
  t.equal((await call(url(), 'POST', rest(), { name: 'gold users', filters: emailOrSms })).status, 201, 'a deleted name can be used again');
});

t.test('All always exists: readable, never created again, never deleted', async (t) => {
  const all = await call(url('All'), 'GET', rest());
  t.same([all.status, all.body], [200, await allBody(gw.project.project_id)]);

  const dup = await call(url(), 'POST', rest(), { name: 'All', filters: gold });
  t.same([dup.status, dup.body], [409, { errors: [{ code: 'already_exists', message: 'A segment named "All" already exists.', path: '/name' }] }]);

  const del = await call(url('All'), 'DELETE', rest());
  t.same([del.status, del.body], [
    400,
    { errors: [{ code: 'validation_failed', message: 'name: the All segment always exists and cannot be deleted', path: '/name' }] },
  ]);
  t.equal((await call(url('All'), 'GET', rest())).status, 200, 'still there');
  t.equal((await call(url('all'), 'GET', rest())).status, 404, 'names are case-sensitive: "all" is not All');
});

t.test('a second POST of an existing name is 409 and keeps the first definition', async (t) => {
  const first = await call(url(), 'POST', rest(), { name: 'dup', filters: gold });
  t.equal(first.status, 201);
  const second = await call(url(), 'POST', rest(), { name: 'dup', filters: emailOrSms });
  t.same([second.status, second.body], [409, { errors: [{ code: 'already_exists', message: 'A segment named "dup" already exists.', path: '/name' }] }]);
  t.same((await call(url('dup'), 'GET', rest())).body, first.body);
  t.equal((await call(url(), 'POST', rest(), { name: 'Dup', filters: gold })).status, 201, 'another case is another name');
});

t.test('concurrent creates of one name: exactly one 201, the others 409, and the winner is stored', async (t) => {
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => call(url(), 'POST', rest(), { name: 'race', filters: [{ field: 'tag', key: 'n', relation: '=', value: i }] })),
  );
  const won = answers.filter((a) => a.status === 201);
  t.equal(won.length, 1, 'one 201');
  t.equal(answers.filter((a) => a.status === 409).length, 11, 'eleven 409');
  t.same((await call(url('race'), 'GET', rest())).body, won[0]?.body, 'the stored segment is the one that was answered 201');
});

t.test('unknown names are 404 on GET, DELETE and count', async (t) => {
  const notFound = { errors: [{ code: 'not_found', message: 'Not found.' }] };
  for (const [method, suffix] of [['GET', ''], ['DELETE', ''], ['GET', '/count']] as const) {
    const answer = await call(url('nobody', suffix), method, rest());
    t.same([answer.status, answer.body], [404, notFound], `${method} ${suffix || '/'}`);
  }
});

t.test('body violations are 400 validation_failed, every one listed with its path', async (t) => {
  const bad = await call(url(), 'POST', rest(), {
    name: '',
    extra: 1,
    filters: [
      { field: 'tag', key: 'plan', relation: '=', value: 'gold' },
      { operator: 'OR' },
      { field: 'tag', key: 'plan', relation: 'like', value: 'g' },
      { field: 'subscription', type: 'FAX' },
    ],
  });
  t.equal(bad.status, 400);
  const paths = (bad.body as { errors: { code: string; path: string }[] }).errors.map((e) => [e.code, e.path]);
  t.same(paths.sort(), [
    ['validation_failed', '/extra'],
    ['validation_failed', '/filters/2/relation'],
    ['validation_failed', '/filters/3/type'],
    ['validation_failed', '/name'],
  ]);

  const cases: [string, unknown, string[]][] = [
    ['no filters', { name: 'x' }, ['/filters']],
    ['empty filters', { name: 'x', filters: [] }, ['/filters']],
    ['filters not a list', { name: 'x', filters: {} }, ['/filters']],
    ['no name', { filters: gold }, ['/name']],
    ['name not a string', { name: 7, filters: gold }, ['/name']],
    ['name over 128 characters', { name: 'é'.repeat(129), filters: gold }, ['/name']],
    ['an OR first', { name: 'x', filters: [{ operator: 'OR' }, ...gold] }, ['/filters/0']],
    ['a bad in list', { name: 'x', filters: [...gold, { field: 'tag', key: 'k', relation: 'in', value: [] }] }, ['/filters/1/value']],
    ['body not an object', [1], ['']],
  ];
  for (const [what, body, expected] of cases) {
    const answer = await call(url(), 'POST', rest(), body);
    t.equal(answer.status, 400, what);
    t.same((answer.body as { errors: { path: string }[] }).errors.map((e) => e.path), expected, what);
  }
  t.equal((await call(url(), 'POST', rest(), { name: 'é'.repeat(128), filters: gold })).status, 201, '128 characters (not bytes) is fine');
  t.equal((await call(url('é'.repeat(128)), 'GET', rest())).status, 200, 'and readable by its percent-encoded path');
  t.equal((await call(url('x'), 'GET', rest())).status, 404, 'nothing invalid was stored');
});

t.test('path names: percent-decoded, 1 to 128 characters', async (t) => {
  const long = await call(url('n'.repeat(129)), 'GET', rest());
  t.same([long.status, long.body], [400, { errors: [{ code: 'validation_failed', message: 'name: must be 1 to 128 characters', path: '/name' }] }]);
  const broken = await call(`${gw.url}/api/segments/%E0%A4%A`, 'GET', rest());
  t.same([broken.status, (broken.body as { errors: { path: string }[] }).errors[0]?.path], [400, '/name']);
  t.equal((await call(`${gw.url}/api/segments/n${'n'.repeat(128)}/count`, 'GET', rest())).status, 400, 'count checks the name too');
  t.equal((await call(`${gw.url}/api/segments/${'n'.repeat(129)}`, 'DELETE', rest())).status, 400, 'delete checks the name too');
});

t.test('bodies: invalid JSON 400, wrong content type 415, over 1 MiB 413', async (t) => {
  const post = (body: string, type = 'application/json') =>
    fetch(url(), { method: 'POST', headers: { authorization: `Bearer ${rest()}`, 'content-type': type }, body }).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as { errors: { code: string }[] },
    }));
  const invalid = await post('{"name":');
  t.same([invalid.status, invalid.body.errors[0]?.code], [400, 'invalid_json']);
  const type = await post(JSON.stringify({ name: 'x', filters: gold }), 'text/plain');
  t.same([type.status, type.body.errors[0]?.code], [415, 'unsupported_media_type']);
  const big = await post(JSON.stringify({ name: 'x', filters: gold, pad: 'x'.repeat(1024 * 1024) }));
  t.same([big.status, big.body.errors[0]?.code], [413, 'payload_too_large']);
});

t.test('REST key only: 401 without or with a bad key, 403 for an SDK key on every route', async (t) => {
  const routes: [string, string, unknown][] = [
    [url(), 'POST', { name: 'k', filters: gold }],
    [url(), 'GET', undefined],
    [url('All'), 'GET', undefined],
    [url('k'), 'DELETE', undefined],
    [url('All', '/count'), 'GET', undefined],
  ];
  for (const [target, method, body] of routes) {
    const what = `${method} ${target.slice(gw.url.length)}`;
    const none = await call(target, method, null, body);
    t.same([none.status, (none.body as { errors: { code: string }[] }).errors[0]?.code], [401, 'missing_key'], what);
    const badKey = await call(target, method, 'rest_nope', body);
    t.same([badKey.status, (badKey.body as { errors: { code: string }[] }).errors[0]?.code], [401, 'invalid_key'], what);
    const sdk = await call(target, method, gw.project.sdk_key, body);
    t.same([sdk.status, (sdk.body as { errors: { code: string }[] }).errors[0]?.code], [403, 'wrong_key_type'], what);
  }
  t.equal((await call(url('k'), 'GET', rest())).status, 404, 'the SDK-key POST stored nothing');
});

t.test('known paths answer OPTIONS and 405 with Allow', async (t) => {
  for (const [target, allow] of [
    [url(), 'GET, POST'],
    [url('x'), 'GET, DELETE'],
    [url('x', '/count'), 'GET'],
  ] as const) {
    const wrong = await call(target, 'PUT', rest(), {});
    t.same([wrong.status, wrong.headers.get('allow')], [405, allow], target);
    const preflight = await call(target, 'OPTIONS', null);
    t.same([preflight.status, preflight.headers.get('access-control-allow-methods')], [204, allow], target);
  }
});

t.test("projects are isolated: another project's segment of the same name is its own", async (t) => {
  t.equal((await call(url(), 'POST', rest(), { name: 'shared', filters: gold })).status, 201);
  const theirs = await call(url(), 'POST', other.rest_key, { name: 'shared', filters: emailOrSms });
  t.equal(theirs.status, 201, 'the same name in another project is not a conflict');
  t.same(((await call(url('shared'), 'GET', other.rest_key)).body as { filters: unknown }).filters, emailOrSms);
  t.same(((await call(url('shared'), 'GET', rest())).body as { filters: unknown }).filters, gold);
  const list = (await call(url(), 'GET', other.rest_key)).body as { segments: { name: string }[] };
  t.same(list.segments.map((s) => s.name), ['All', 'shared'], "the other project lists only its own");
  t.same(list.segments[0], await allBody(other.project_id), "its All carries its own creation time");
  t.equal((await call(url('shared'), 'DELETE', other.rest_key)).status, 200);
  t.equal((await call(url('shared'), 'GET', rest())).status, 200, 'deleting theirs leaves ours');
  t.equal((await call(url('dup'), 'GET', other.rest_key)).status, 404, "ours are not visible to them");
});
