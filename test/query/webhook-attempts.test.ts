import t from 'tap';
import { eventCursor, webhookAttemptCursor } from '../../engine/infra/validation/cursor.ts';
import { insertWebhookAttempts, listWebhookAttempts } from '../../engine/infra/clickhouse/webhook-attempts.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import type { WebhookAttempt, WebhookAttemptFilter, WebhookAttemptPosition, WebhookAttemptRow, WebhookEventType } from '../../schemas/webhooks.ts';
import { call, type Answer } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { BASE, bytes, errorPaths, get, otherProject } from './fixtures.ts';

/** Webhook attempts (docs/api.md#webhook-attempts): recorded in ClickHouse, read one endpoint at a time. */

const gw = await inProcessGateway(t);
const A = gw.project;
const B = await otherProject(gw);
const registry = new WebhookRegistry(gw.redis, gw.topology);
const hook = await registry.create(A.project_id, { url: 'https://example.com/hooks', events: ['delivery.sent', 'delivery.failed'] });
const otherHook = await registry.create(A.project_id, { url: 'https://example.com/other', events: ['receipt.opened'] });
const hookOfB = await registry.create(B.project_id, { url: 'https://example.com/b', events: ['delivery.sent'] });

const TYPES: readonly WebhookEventType[] = ['delivery.sent', 'delivery.failed', 'receipt.opened'];

/**
 * Attempt number `i` of an endpoint: three share each ms (ties ordered by event id, then attempt),
 * event ids not in insert order, every 4th failed (every 8th without an answer), every 5th about
 * no notification.
 */
function attemptRow(project: string, webhookId: string, i: number, overrides: Partial<WebhookAttemptRow> = {}): WebhookAttemptRow {
  const failed = i % 4 === 0;
  const answered = !failed || i % 8 !== 0;
  return {
    project,
    webhook_id: webhookId,
    event_id: `ev-${String((i * 37) % 1000).padStart(3, '0')}-${i % 50}`,
    event_type: TYPES[i % 3] ?? 'delivery.sent',
    notification_id: i % 5 === 0 ? '' : `n${i % 4}`,
    attempt: 1 + (i % 3),
    status: failed ? 'failed' : 'delivered',
    response_code: failed ? (answered ? 503 : 0) : 200,
    latency_ms: failed && !answered ? 10_000 : 20 + i,
    error: failed ? (answered ? 'Service Unavailable' : 'timeout') : '',
    at: BASE + Math.floor(i / 3) * 1000 + 7,
    ...overrides,
  };
}

/** Newest first, as the listing goes: (at, event_id, attempt) descending. */
const newestFirst = (a: WebhookAttemptRow, b: WebhookAttemptRow): number => b.at - a.at || bytes(b.event_id, a.event_id) || b.attempt - a.attempt;

function shown(r: WebhookAttemptRow): WebhookAttempt {
  return {
    event_id: r.event_id,
    event_type: r.event_type,
    notification_id: r.notification_id,
    attempt: r.attempt,
    status: r.status,
    response_code: r.response_code === 0 ? null : r.response_code,
    latency_ms: r.latency_ms,
    error: r.error === '' ? null : r.error,
    at: new Date(r.at).toISOString(),
  };
}

const rowsA = Array.from({ length: 130 }, (_, i) => attemptRow(A.project_id, hook.id, i));
// Several inserts, so pages span several parts; the other endpoint and project reuse every event id and time.
await insertWebhookAttempts(gw.clickhouse, rowsA.slice(0, 70));
await insertWebhookAttempts(gw.clickhouse, rowsA.slice(70));
await insertWebhookAttempts(gw.clickhouse, Array.from({ length: 30 }, (_, i) => attemptRow(A.project_id, otherHook.id, i)));
await insertWebhookAttempts(gw.clickhouse, Array.from({ length: 20 }, (_, i) => attemptRow(B.project_id, hookOfB.id, i)));
// Project B's rows under A's endpoint id: only the project's own rows may ever show.
await insertWebhookAttempts(gw.clickhouse, Array.from({ length: 10 }, (_, i) => attemptRow(B.project_id, hook.id, 500 + i)));
await insertWebhookAttempts(gw.clickhouse, []);
const newestA = [...rowsA].sort(newestFirst);

/** Every page of the engine's listing, following its positions. */
async function walkEngine(project: string, webhookId: string, filter: WebhookAttemptFilter, limit: number): Promise<{ attempts: WebhookAttempt[]; pages: number }> {
  const attempts: WebhookAttempt[] = [];
  let after: WebhookAttemptPosition | null = null;
  let pages = 0;
  do {
    const page = await listWebhookAttempts(gw.clickhouse, project, webhookId, filter, limit, after);
    pages++;
    attempts.push(...page.attempts);
    after = page.next;
  } while (after !== null);
  return { attempts, pages };
}

t.test('engine: an endpoint lists its attempts newest first, each as inserted', async (t) => {
  const page = await listWebhookAttempts(gw.clickhouse, A.project_id, hook.id, {}, 1000, null);
  t.same(page.attempts, newestA.map(shown));
  t.equal(page.next, null, 'one page holds them all');
  const timedOut = page.attempts.find((a) => a.error === 'timeout');
  t.match(timedOut, { status: 'failed', response_code: null, latency_ms: 10_000 }, 'no answer: response_code null');
  const ok = page.attempts.find((a) => a.status === 'delivered');
  t.match(ok, { response_code: 200, error: null }, 'delivered: error null');
  t.match(ok?.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.007Z$/, 'at in RFC 3339 with its ms');
  const first = await listWebhookAttempts(gw.clickhouse, A.project_id, hook.id, {}, 10, null);
  t.same(first.attempts, newestA.slice(0, 10).map(shown));
  const last = newestA[9];
  t.same(first.next, { at: last?.at, event_id: last?.event_id, attempt: last?.attempt }, 'the next page starts after the last row');
});

t.test('engine: status, event_type, since and until filter, alone and together', async (t) => {
  const since = BASE + 10_000;
  const until = BASE + 30_000;
  const cases: [string, WebhookAttemptFilter, (r: WebhookAttemptRow) => boolean][] = [
    ['status=failed', { status: 'failed' }, (r) => r.status === 'failed'],
    ['status=delivered', { status: 'delivered' }, (r) => r.status === 'delivered'],
    ['event_type', { event_type: 'delivery.failed' }, (r) => r.event_type === 'delivery.failed'],
    ['since (inclusive)', { since: BASE + 10_007 }, (r) => r.at >= BASE + 10_007],
    ['until (exclusive)', { until: BASE + 10_007 }, (r) => r.at < BASE + 10_007],
    ['all four', { status: 'failed', event_type: 'delivery.sent', since, until }, (r) => r.status === 'failed' && r.event_type === 'delivery.sent' && r.at >= since && r.at < until],
  ];
  for (const [name, filter, match] of cases) {
    const want = newestA.filter(match);
    t.ok(want.length > 0 && want.length < rowsA.length, `${name}: ${want.length} attempts`);
    const page = await listWebhookAttempts(gw.clickhouse, A.project_id, hook.id, filter, 1000, null);
    t.same(page.attempts, want.map(shown), name);
  }
  const none = await listWebhookAttempts(gw.clickhouse, A.project_id, hook.id, { event_type: 'user.opted_out' }, 10, null);
  t.same(none, { attempts: [], next: null }, 'an event type without attempts: an empty last page');
});

t.test('engine: following the positions returns every attempt once, in order, whatever the page size', async (t) => {
  for (const limit of [1, 7, 50]) {
    const walked = await walkEngine(A.project_id, hook.id, {}, limit);
    t.same(walked.attempts, newestA.map(shown), `limit ${limit}`);
    t.equal(walked.pages, Math.ceil(rowsA.length / limit), `limit ${limit}: pages`);
  }
  t.same((await walkEngine(A.project_id, hook.id, { status: 'failed' }, 4)).attempts, newestA.filter((r) => r.status === 'failed').map(shown), 'with a filter');
});

t.test('engine: another endpoint and another project never show', async (t) => {
  const other = await listWebhookAttempts(gw.clickhouse, A.project_id, otherHook.id, {}, 1000, null);
  t.equal(other.attempts.length, 30, "the other endpoint's own");
  const ofB = await listWebhookAttempts(gw.clickhouse, B.project_id, hook.id, {}, 1000, null);
  t.same(
    ofB.attempts.map((a) => a.event_id),
    Array.from({ length: 10 }, (_, i) => attemptRow(B.project_id, hook.id, 500 + i)).sort(newestFirst).map((r) => r.event_id),
    "project B reads only its rows under that id",
  );
  t.same(await listWebhookAttempts(gw.clickhouse, A.project_id, 'no-such-endpoint', {}, 10, null), { attempts: [], next: null });
});

const list = (id: string, params: Record<string, string | number> = {}, key: string | null = A.rest_key): Promise<Answer> => get(gw, `/api/webhooks/${encodeURIComponent(id)}/attempts`, params, key);
interface Page {
  attempts: WebhookAttempt[];
  next_cursor: string | null;
}
const page = (a: Answer): Page => a.body as Page;

t.test('route: a page of attempts, 100 by default, and next_cursor to the rest', async (t) => {
  const answer = await list(hook.id);
  t.equal(answer.status, 200);
  t.same(page(answer).attempts, newestA.slice(0, 100).map(shown));
  t.type(page(answer).next_cursor, 'string');
  const rest = await list(hook.id, { cursor: page(answer).next_cursor ?? '' });
  t.same(page(rest).attempts, newestA.slice(100).map(shown));
  t.equal(page(rest).next_cursor, null);
});

t.test('route: filters and a walk through next_cursor', async (t) => {
  const since = new Date(BASE + 5_000).toISOString();
  const until = '2026-11-01T02:00:40+02:00';
  const params = { status: 'delivered', event_type: 'delivery.sent', since, until, limit: 3 };
  const match = (r: WebhookAttemptRow): boolean => r.status === 'delivered' && r.event_type === 'delivery.sent' && r.at >= BASE + 5_000 && r.at < BASE + 40_000;
  const seen: WebhookAttempt[] = [];
  let cursor: string | null = null;
  do {
    const answer = await list(hook.id, { ...params, ...(cursor === null ? {} : { cursor }) });
    t.equal(answer.status, 200);
    seen.push(...page(answer).attempts);
    cursor = page(answer).next_cursor;
  } while (cursor !== null);
  const want = newestA.filter(match);
  t.ok(want.length > 3, `${want.length} attempts over several pages`);
  t.same(seen, want.map(shown));
});

t.test("route: 404 for an unknown endpoint and for another project's, before ClickHouse is read", async (t) => {
  for (const [name, id, key] of [
    ['unknown id', 'no-such-endpoint', A.rest_key],
    ["another project's endpoint", hookOfB.id, A.rest_key],
    ["A's endpoint with B's key", hook.id, B.rest_key],
  ] as const) {
    const answer = await list(id, {}, key);
    t.equal(answer.status, 404, name);
    t.match(answer.body, { errors: [{ code: 'not_found' }] }, name);
  }
  const ofB = await list(hookOfB.id, {}, B.rest_key);
  t.equal(page(ofB).attempts.length, 20, 'B reads its own endpoint');
  const deleted = await registry.create(A.project_id, { url: 'https://example.com/gone', events: ['delivery.sent'] });
  await insertWebhookAttempts(gw.clickhouse, [attemptRow(A.project_id, deleted.id, 1)]);
  t.equal((await list(deleted.id)).status, 200);
  await registry.delete(A.project_id, deleted.id);
  t.equal((await list(deleted.id)).status, 404, 'a deleted endpoint is unknown, its rows left in ClickHouse');
});

t.test('route: bad parameters are one 400 naming each; cursors of other listings are refused', async (t) => {
  const answer = await call(`${gw.url}/api/webhooks/${hook.id}/attempts?status=sent&event_type=delivery.nope&limit=0&since=2026-11-01&until=yesterday&channel=PUSH`, 'GET', A.rest_key);
  t.equal(answer.status, 400);
  t.same(errorPaths(answer).sort(), [
    'validation_failed /channel',
    'validation_failed /event_type',
    'validation_failed /limit',
    'validation_failed /since',
    'validation_failed /status',
    'validation_failed /until',
  ]);
  t.equal((await list(hook.id, { limit: 1001 })).status, 400, 'limit past 1000');
  t.equal((await list(hook.id, { limit: 1000 })).status, 200, 'limit 1000');
  const events = await list(hook.id, { cursor: eventCursor({ at: BASE, external_id: 'u1', stream_id: '1-0' }) });
  t.same(errorPaths(events), ['validation_failed /cursor'], 'an events cursor');
  t.match(events.body, { errors: [{ message: /next_cursor of GET \/api\/webhooks\/\{id\}\/attempts/ }] });
  const good = webhookAttemptCursor({ at: BASE, event_id: 'ev', attempt: 1 });
  t.equal((await list(hook.id, { cursor: `${good}x` })).status, 400, 'an edited cursor');
  t.equal((await list(hook.id, { cursor: webhookAttemptCursor({ at: BASE, event_id: 'ev', attempt: 0 }) })).status, 400, 'attempt 0');
  t.equal((await list(hook.id, { cursor: good })).status, 200, 'a made-up but well-formed cursor reads from there');
  t.equal((await list('x'.repeat(129))).status, 400, 'an id past 128 characters');
  t.equal((await list(hook.id, {}, gw.project.sdk_key)).status, 403, 'an SDK key');
});
