/// <reference lib="dom" />
import t from 'tap';
import { finish, openPage } from '../helpers/browser.ts';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';

/**
 * The API reference (`GET /api/docs`, Swagger UI) in headless Chromium against a gateway process:
 * every documented path on the page, a call tried with a REST key (in its header, in no URL),
 * nothing fetched from elsewhere.
 */

const FILE = 'api-docs';
// One gateway for the file; each test has a project of its own.
const d = await deployment(t);
const gw = await d.start(['gateway']);

t.test('the reference lists every path, tries a call with the key, and loads nothing from elsewhere', async (t) => {
  const project = await d.createProject();
  const doc = (await call(`${gw.url}/api/openapi.json`, 'GET', null)).body as { paths: Record<string, Record<string, unknown>> };
  const p = await openPage(t, FILE);
  const sent: { url: string; authorization: string | undefined }[] = [];
  p.page.on('request', (r) => void sent.push({ url: r.url(), authorization: r.headers()['authorization'] }));

  await p.page.goto(`${gw.url}/api/docs`);
  await p.page.waitForSelector('.opblock-summary-path');
  const shown = await p.page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path') ?? ''));
  for (const path of Object.keys(doc.paths)) t.ok(shown.includes(path), `${path} is on the page`);
  const operations = Object.values(doc.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
  t.equal(shown.length, operations, 'one entry per operation');
  await p.screenshot('list');

  // Authorize: the REST key under the REST scheme.
  await p.page.click('.auth-wrapper button.authorize');
  const scheme = p.page.locator('.auth-container', { has: p.page.locator('h4', { hasText: /^\s*restKey\b/ }) });
  await scheme.locator('input').fill(project.rest_key);
  await scheme.locator('button.authorize').click();
  await p.screenshot('authorized');
  await p.page.click('.modal-ux button.btn-done, .modal-ux .close-modal');

  // Try it: GET /api/segments takes a REST key and nothing else.
  const op = p.page.locator('#operations-default-getSegments');
  await op.locator('.opblock-summary').click();
  await op.locator('button.execute').click();
  const status = op.locator('.live-responses-table .response .response-col_status');
  await status.first().waitFor();
  t.equal((await status.first().textContent())?.trim(), '200', 'the page shows 200');
  t.match(await op.locator('.live-responses-table .response .response-col_description').first().textContent(), /"segments"/, 'and the body');
  const tried = sent.find((r) => r.url === `${gw.url}/api/segments`);
  t.equal(tried?.authorization, `Bearer ${project.rest_key}`, 'the call carried the key');
  t.equal(p.page.url().split('#')[1], '/default/getSegments', 'deep linking: the open call is in the address');
  await finish(t, p, 'tried', gw.url, [project.rest_key]);
  t.same(p.errors, [], 'no page or console errors');
});

t.test('a deep link opens its operation', async (t) => {
  const project = await d.createProject();
  const p = await openPage(t, FILE);
  await p.page.goto(`${gw.url}/api/docs#/default/postNotifications`);
  await p.page.locator('#operations-default-postNotifications .opblock-body').waitFor();
  await finish(t, p, 'deep-link', gw.url, [project.rest_key]);
  t.same(p.errors, [], 'no page or console errors');
});
