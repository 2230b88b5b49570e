import { createHmac } from 'node:crypto';
import t from 'tap';
import { deployment, type TestDeployment } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { entriesOf } from './support.ts';

const raw = (url: string, key: string, body: string) =>
  fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body }).then(async (res) => ({
    status: res.status,
    body: (await res.json()) as unknown,
  }));

// One gateway for the tests that need no other role, each with a project of its own.
const d: TestDeployment = await deployment(t);
const gw = await d.start(['gateway']);

t.test('a lone UTF-16 surrogate escape is refused with 400 invalid_json, not accepted and lost later', async (t) => {
  const project = await d.createProject();
  for (const body of [
    '{"external_id":"\\ud800"}',
    '{"external_id":"ok","tags":{"k":"x\\uDFFFy"}}',
    '{"external_id":"ok","tags":{"\\udbff":"v"}}',
  ]) {
    const answer = await raw(`${gw.url}/api/sdk/users`, project.sdk_key, body);
    t.equal(answer.status, 400, body);
    t.match(answer.body, { errors: [{ code: 'invalid_json' }] });
  }
  const pair = await raw(`${gw.url}/api/sdk/users`, project.sdk_key, '{"external_id":"ok","tags":{"emoji":"\\ud83d\\ude00"}}');
  t.equal(pair.status, 202, 'a well-formed surrogate pair is fine');
  t.same((await entriesOf(d.prefix, project.project_id, 'ok')).map((e) => (e.op === 'identify' ? e.tags : null)), [{ emoji: 's😀' }]);
});

t.test('a tag named __proto__ is kept like any other tag', async (t) => {
  // Applied state is read back: a deployment of its own, whose apply worker touches no other test's log.
  const own = await deployment(t);
  const applying = await own.start(['gateway', 'apply']);
  t.equal((await raw(`${applying.url}/api/sdk/users`, own.project.sdk_key, '{"external_id":"p1","tags":{"__proto__":"x","b":1}}')).status, 202);
  const tags = await eventually('applied', async () => {
    const res = await call(`${applying.url}/api/users/p1`, 'GET', own.project.rest_key);
    return res.status === 200 ? (res.body as { tags: Record<string, unknown> }).tags : undefined;
  });
  t.same(Object.entries(tags).sort(), [['__proto__', 'x'], ['b', 1]]);
});

t.test('a malformed identity_hash in the body is an identity failure (401), not a schema error', async (t) => {
  const project = await d.createProject({ identityVerification: true });
  const good = createHmac('sha256', project.identity_secret).update('v1').digest('hex');
  for (const hash of ['nothex', good.toUpperCase(), good.slice(1)]) {
    const answer = await call(`${gw.url}/api/sdk/users`, 'POST', project.sdk_key, { external_id: 'v1', identity_hash: hash });
    t.equal(answer.status, 401, hash);
    t.match(answer.body, { errors: [{ code: 'identity_verification_failed' }] });
  }
  t.equal((await call(`${gw.url}/api/sdk/users`, 'POST', project.sdk_key, { external_id: 'v1', identity_hash: good })).status, 202);
});

t.test('the OpenAPI document and the docs page are served without a key', async (t) => {
  const doc = await call(`${gw.url}/api/openapi.json`, 'GET', null);
  t.equal(doc.status, 200);
  t.match(doc.body, { openapi: '3.1.0' });
  const paths = Object.keys((doc.body as { paths: Record<string, unknown> }).paths);
  for (const path of ['/api/sdk/users', '/api/sdk/batch', '/api/sdk/ws', '/api/sdk/opt-out', '/api/users/{external_id}', '/metrics']) {
    t.ok(paths.includes(path), `${path} is documented`);
  }
  const page = await fetch(`${gw.url}/api/docs`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  t.equal(page.headers.get('cache-control'), 'no-cache');
  const html = await page.text();
  const assets = [...html.matchAll(/(?:href|src)="(\/api\/docs\/assets\/[^"]+)"/g)].map((m) => m[1] ?? '');
  t.same(assets.map((a) => a.replace(/^.*\//, '').replace(/\.[0-9a-f]{10}\./, '.')), ['swagger-ui.css', 'swagger-ui-bundle.js', 'docs-init.js'], 'Swagger UI and its settings');
  for (const asset of assets) {
    const answer = await fetch(`${gw.url}${asset}`);
    t.equal(answer.status, 200, asset);
    t.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable', `${asset} is kept by browsers`);
    const text = await answer.text();
    if (asset.includes('docs-init')) t.match(text, /url: '\/api\/openapi\.json'[^]*validatorUrl: null/, 'over this document, validating nothing elsewhere');
  }
  const missing = await fetch(`${gw.url}${assets[0]?.replace(/[^/]+$/, '') ?? ''}swagger-ui.js.map`);
  t.equal(missing.status, 404, 'a file not served is not found');
});

t.test('browsers may call the API cross-origin: OPTIONS preflight and Access-Control-Allow-Origin', async (t) => {
  const project = await d.createProject();
  const pre = await fetch(`${gw.url}/api/sdk/users/u1/tags`, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization,content-type' },
  });
  t.equal(pre.status, 204);
  t.equal(pre.headers.get('access-control-allow-origin'), '*');
  t.equal(pre.headers.get('access-control-allow-methods'), 'PUT');
  t.match(pre.headers.get('access-control-allow-headers'), /Authorization.*Content-Type.*X-Identity-Hash/);
  const accepted = await fetch(`${gw.url}/api/sdk/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${project.sdk_key}`, 'content-type': 'application/json', origin: 'https://app.example' },
    body: '{"external_id":"u1"}',
  });
  t.equal(accepted.status, 202);
  t.equal(accepted.headers.get('access-control-allow-origin'), '*', 'on answers');
  const refused = await fetch(`${gw.url}/api/sdk/users`, { method: 'POST', headers: { origin: 'https://app.example' } });
  t.equal(refused.status, 401);
  t.equal(refused.headers.get('access-control-allow-origin'), '*', 'on errors too, so the page can read them');
  t.equal((await fetch(`${gw.url}/nowhere`, { method: 'OPTIONS' })).status, 404, 'unknown paths stay 404');
});

t.test('a leap-second timestamp is placed at the next minute, not replaced by the receive time', async (t) => {
  const project = await d.createProject();
  const body = { external_id: 'leap', name: 'tick', timestamp: '2016-12-31T23:59:60Z' };
  t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', project.sdk_key, body)).status, 202);
  const [entry] = await entriesOf(d.prefix, project.project_id, 'leap');
  t.equal(entry?.op === 'event' ? entry.ts : null, Date.parse('2017-01-01T00:00:00Z'));
});
