import t from 'tap';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import type { NotificationView } from '../../schemas/notifications.ts';
import { call } from '../helpers/http.ts';
import { inProcessGateway, type InProcess } from '../helpers/in-process.ts';

/** GET /api/notifications: a project's notifications, newest first, in pages that never repeat or skip. */

interface Page {
  notifications: NotificationView[];
  next_cursor: string | null;
}

let gw: InProcess;
let other: CreatedProject;
const body = { contents: { en: 'Hi' }, include_external_user_ids: ['nobody'] };

async function create(key: string, extra: Record<string, unknown> = {}): Promise<string> {
  const answer = await call(`${gw.url}/api/notifications`, 'POST', key, { ...body, ...extra });
  if (answer.status !== 201) throw new Error(`POST answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

async function list(query: string, key = gw.project.rest_key): Promise<{ status: number; body: Page & { errors?: { code: string; message: string }[] } }> {
  const answer = await call(`${gw.url}/api/notifications${query}`, 'GET', key);
  return { status: answer.status, body: answer.body as Page };
}

/** Every id through the cursor, `limit` at a time, creating `during(page)` between pages. */
async function walk(limit: number, during: (page: number) => Promise<void> = async () => {}): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; ; page++) {
    const answer = await list(`?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    if (answer.status !== 200) throw new Error(`GET answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    ids.push(...answer.body.notifications.map((n) => n.id));
    cursor = answer.body.next_cursor;
    if (cursor === null) return ids;
    await during(page);
  }
}

const created: string[] = [];

t.before(async () => {
  gw = await inProcessGateway(t);
  other = await new Keystore(gw.redis, gw.topology).createProject('other', false);
  for (let i = 0; i < 25; i++) created.push(await create(gw.project.rest_key));
  await create(other.rest_key);
});

t.test('newest first, with the view GET /api/notifications/{id} answers', async (t) => {
  const { status, body } = await list('');
  t.equal(status, 200);
  t.equal(body.notifications.length, 20, 'the default page size is 20');
  const times = body.notifications.map((n) => Date.parse(n.created_at));
  t.ok(times.every((at, i) => i === 0 || at <= (times[i - 1] ?? 0)), 'newest first');
  const all = (await list('?limit=100')).body.notifications.map((n) => n.id);
  t.same([...all].sort(), [...created].sort(), 'every notification of the project');
  t.same(body.notifications.map((n) => n.id), all.slice(0, 20), 'the first page is the head of the list');
  const one = await call(`${gw.url}/api/notifications/${created.at(-1) ?? ''}`, 'GET', gw.project.rest_key);
  t.same(body.notifications[0], one.body, 'each item is the notification view');
  t.type(body.next_cursor, 'string');
});

t.test('paging neither repeats nor skips, even while notifications are created', async (t) => {
  const all = (await list('?limit=100')).body.notifications.map((n) => n.id);
  t.same(await walk(7), all, 'every notification once, in order');
  const during: string[] = [];
  const ids = await walk(4, async () => void during.push(await create(gw.project.rest_key)));
  t.same(ids, all, 'those created while paging are not met again: they are newer than the first page');
  created.push(...during);
  const last = await list(`?limit=100`);
  t.equal(last.body.next_cursor, null, 'a page holding the rest has no next_cursor');
  t.equal(last.body.notifications.length, created.length);
});

t.test("another project's notifications are not listed", async (t) => {
  const mine = new Set(created);
  const theirs = await list('', other.rest_key);
  t.equal(theirs.body.notifications.length, 1);
  t.notOk(mine.has(theirs.body.notifications[0]?.id ?? ''), 'the other project sees only its own');
  const cursor = theirs.body.notifications[0]?.id ?? '';
  const crossed = await list(`?cursor=${cursor}`);
  t.equal(crossed.status, 400, "another project's id is no cursor of this list");
});

t.test('a canceled notification is listed canceled; a repeated idempotent POST lists once', async (t) => {
  const id = await create(gw.project.rest_key, { send_after: new Date(Date.now() + 3_600_000).toISOString() });
  t.equal((await list('?limit=1')).body.notifications[0]?.status, 'scheduled');
  t.equal((await call(`${gw.url}/api/notifications/${id}`, 'DELETE', gw.project.rest_key)).status, 200);
  t.match((await list('?limit=1')).body.notifications[0], { id, status: 'canceled', canceled: true });
  const first = await create(gw.project.rest_key, { idempotency_key: 'once' });
  const again = await create(gw.project.rest_key, { idempotency_key: 'once' });
  t.equal(again, first);
  const ids = (await list('?limit=3')).body.notifications.map((n) => n.id);
  t.same(ids, [first, id, created.at(-1)], 'the repeat is not listed again');
});

t.test('keys and parameters are checked', async (t) => {
  t.equal((await list('', gw.project.sdk_key)).status, 403, 'an SDK key may not list');
  t.equal((await list('', 'rest_nope')).status, 401);
  for (const query of ['?limit=0', '?limit=101', '?limit=x', '?cursor=nope', `?cursor=${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`, '?other=1']) {
    const answer = await list(query);
    t.equal(answer.status, 400, query);
    t.equal(answer.body.errors?.[0]?.code, 'validation_failed', `${query}: validation_failed`);
  }
});
