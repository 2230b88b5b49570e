import t from 'tap';
import { deployment, runEngine } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';

/** Webhook endpoints (docs/api.md#webhooks): registered, read and deleted over REST and the CLI. */

const d = await deployment(t);
// The test environment allows private addresses (test/helpers/outbound.ts); the second gateway does not.
const open = await d.start(['gateway']);
const guarded = await d.start(['gateway'], { OUTBOUND_ALLOW_PRIVATE: 'false' });
const rest = d.project.rest_key;
const url = `${open.url}/api/webhooks`;
const receiver = 'https://backend.example.com/engine-events';
const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const idle = { state: 'active', disabled_reason: null, disabled_at: null, queued: 0, failures_in_row: 0, failing_since: null, next_attempt_at: null, last_attempt_at: null, last_success_at: null, last_status_code: null, last_error: null, delivered: 0, failed_attempts: 0 };

t.test('create answers 201 with a new whsec_ secret, or the one given; list and get show the health', async (t) => {
  const created = await call(url, 'POST', rest, { url: receiver, events: ['subscription.retired', 'delivery.failed'] });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const webhook = created.body as { id: string; secret: string };
  t.same(Object.keys(webhook).sort(), ['created_at', 'events', 'id', 'secret', 'url']);
  t.match(webhook, { id: /^[0-9a-f-]{36}$/, url: receiver, events: ['delivery.failed', 'subscription.retired'], created_at: /^\d{4}-\d\d-\d\dT/ });
  t.match(webhook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/, '32 random bytes');
  t.equal(Buffer.from(webhook.secret.slice('whsec_'.length), 'base64').length, 32);

  const given = await call(url, 'POST', rest, { url: 'http://other.example.com/hook', events: ['user.opted_out'], secret });
  t.equal(given.status, 201);
  t.equal((given.body as { secret: string }).secret, secret, 'the given secret is kept');

  t.same((await call(`${url}/${webhook.id}`, 'GET', rest)).body, { ...webhook, health: idle });
  const listed = await call(url, 'GET', rest);
  t.equal(listed.status, 200);
  t.same(listed.body, { webhooks: [{ ...webhook, health: idle }, { ...(given.body as object), health: idle }] }, 'oldest first');
});

t.test('delete answers the endpoint; then it is 404', async (t) => {
  const created = (await call(url, 'POST', rest, { url: receiver, events: ['delivery.sent'] })).body as { id: string };
  const deleted = await call(`${url}/${created.id}`, 'DELETE', rest);
  t.same([deleted.status, deleted.body], [200, { ...created, health: idle }]);
  t.match(await call(`${url}/${created.id}`, 'GET', rest), { status: 404, body: { errors: [{ code: 'not_found' }] } });
  t.match(await call(`${url}/${created.id}`, 'DELETE', rest), { status: 404, body: { errors: [{ code: 'not_found' }] } });
  t.notOk(((await call(url, 'GET', rest)).body as { webhooks: { id: string }[] }).webhooks.some((w) => w.id === created.id), 'not listed');
});

t.test('bad bodies are 400 validation_failed with the path', async (t) => {
  for (const [body, path, message] of [
    [{ url: receiver, events: ['delivery.bounced'] }, '/events/0', undefined],
    [{ url: receiver, events: [] }, '/events', undefined],
    [{ url: receiver, events: ['delivery.sent', 'delivery.sent'] }, '/events', undefined],
    [{ url: receiver, events: ['delivery.sent'], secret: 'not-a-secret' }, '/secret', undefined],
    [{ url: receiver, events: ['delivery.sent'], secret: 'whsec_short' }, '/secret', undefined],
    [{ events: ['delivery.sent'] }, '/url', undefined],
    [{ url: 'ftp://backend.example.com/x', events: ['delivery.sent'] }, '/url', /must be an https or http URL/],
    [{ url: 'https://user:pass@backend.example.com/x', events: ['delivery.sent'] }, '/url', /credentials/],
    [{ url: 'not a url', events: ['delivery.sent'] }, '/url', /not a URL/],
  ] as const) {
    const answer = await call(url, 'POST', rest, body);
    t.match([answer.status, answer.body], [400, { errors: [{ code: 'validation_failed', path, ...(message ? { message } : {}) }] }], JSON.stringify(body));
  }
});

t.test('a private or loopback URL is refused unless OUTBOUND_ALLOW_PRIVATE is true', async (t) => {
  for (const hook of ['http://127.0.0.1:9999/hook', 'http://[::1]/hook', 'https://169.254.169.254/latest', 'http://10.1.2.3/hook']) {
    const refused = await call(`${guarded.url}/api/webhooks`, 'POST', rest, { url: hook, events: ['delivery.sent'] });
    t.match([refused.status, refused.body], [400, { errors: [{ code: 'validation_failed', path: '/url', message: /^url: must not point at an? / }] }], hook);
  }
  const accepted = await call(url, 'POST', rest, { url: 'http://127.0.0.1:9999/hook', events: ['delivery.sent'] });
  t.equal(accepted.status, 201, 'allowed where OUTBOUND_ALLOW_PRIVATE is true');
  t.equal((await call(`${guarded.url}/api/webhooks`, 'POST', rest, { url: receiver, events: ['delivery.sent'] })).status, 201, 'a public name is taken');
});

t.test("another project's REST key sees none of them; an SDK key is refused", async (t) => {
  const mine = (await call(url, 'POST', rest, { url: receiver, events: ['receipt.opened'] })).body as { id: string };
  const other = await d.createProject();
  t.same((await call(url, 'GET', other.rest_key)).body, { webhooks: [] });
  t.equal((await call(`${url}/${mine.id}`, 'GET', other.rest_key)).status, 404);
  t.equal((await call(`${url}/${mine.id}`, 'DELETE', other.rest_key)).status, 404);
  t.equal((await call(`${url}/${mine.id}`, 'GET', rest)).status, 200, 'still there');
  for (const [method, path, body] of [
    ['POST', url, { url: receiver, events: ['delivery.sent'] }],
    ['GET', url, undefined],
    ['GET', `${url}/${mine.id}`, undefined],
    ['DELETE', `${url}/${mine.id}`, undefined],
  ] as const) {
    t.match(await call(path, method, d.project.sdk_key, body), { status: 403, body: { errors: [{ code: 'wrong_key_type' }] } }, `${method} ${path}`);
  }
});

t.test('the engine webhooks commands', async (t) => {
  const project = d.project.project_id;
  const created = await runEngine(['webhooks', 'create', project, '--url', receiver, '--events', 'receipt.clicked, delivery.sent'], d.env);
  t.equal(created.code, 0, created.stderr);
  const webhook = JSON.parse(created.stdout) as { id: string; secret: string };
  t.match(webhook, { url: receiver, events: ['delivery.sent', 'receipt.clicked'], secret: /^whsec_/ });
  t.same((await call(`${url}/${webhook.id}`, 'GET', rest)).body, { ...webhook, health: idle }, 'as the route answers');

  const withSecret = await runEngine(['webhooks', 'create', project, '--url', receiver, '--events', 'user.opted_out', '--secret', secret], d.env);
  t.equal((JSON.parse(withSecret.stdout) as { secret: string }).secret, secret);

  const listed = await runEngine(['webhooks', 'list', project], d.env);
  t.equal(listed.code, 0, listed.stderr);
  t.same(JSON.parse(listed.stdout), (await call(url, 'GET', rest)).body);
  const got = await runEngine(['webhooks', 'get', project, webhook.id], d.env);
  t.same(JSON.parse(got.stdout), { ...webhook, health: idle });

  // Refusals run side by side: each is a process start, and none writes anything.
  const refusals: [string[], Record<string, string>, RegExp][] = [
    [['--url', 'ftp://backend.example.com/x', '--events', 'delivery.sent'], d.env, /url: must be an https or http URL/],
    [['--url', receiver, '--events', 'delivery.bounced'], d.env, /events\/0/],
    [['--url', receiver, '--events', 'delivery.sent', '--secret', 'nope'], d.env, /secret/],
    [['--url', 'http://127.0.0.1:9/x', '--events', 'delivery.sent'], { ...d.env, OUTBOUND_ALLOW_PRIVATE: 'false' }, /url: must not point at a loopback address/],
  ];
  const [unknown, ...refused] = await Promise.all([
    runEngine(['webhooks', 'list', 'nope'], d.env),
    ...refusals.map(([args, env]) => runEngine(['webhooks', 'create', project, ...args], env)),
  ]);
  refused.forEach((bad, i) => t.same([bad.code, refusals[i]?.[2].test(bad.stderr)], [1, true], bad.stderr));
  t.same([unknown?.code, /unknown project nope/.test(unknown?.stderr ?? '')], [1, true]);

  const deleted = await runEngine(['webhooks', 'delete', project, webhook.id], d.env);
  t.equal(deleted.code, 0, deleted.stderr);
  t.same(JSON.parse(deleted.stdout), { ...webhook, health: idle });
  t.equal((await call(`${url}/${webhook.id}`, 'GET', rest)).status, 404);
  const again = await runEngine(['webhooks', 'delete', project, webhook.id], d.env);
  t.same([again.code, /no webhook/.test(again.stderr)], [1, true]);
});
