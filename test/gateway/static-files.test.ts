import t from 'tap';
import { openApiDocument } from '../../gateway/server/openapi.ts';
import { routes } from '../../gateway/routes/table.ts';
import { hashedName, mediaType, staticFile, staticFiles } from '../../gateway/static/files.ts';
import { UnavailableError } from '../../schemas/errors.ts';
import { captureStderr, gatewayWith } from '../helpers/gateway-app.ts';

/** Files served from memory by a route of the table (gateway/static/files.ts). */

const noClickHouse = { get: () => Promise.reject(new UnavailableError('no ClickHouse in this test')), ping: () => Promise.resolve(false) };
const noIngest = { write: () => Promise.resolve() };

const script = 'console.log("é");';
const scriptName = hashedName('app.js', script);
let loads = 0;
const page = staticFile({
  path: '/test-app',
  summary: 'A page',
  type: mediaType('.html'),
  file: () => ({ body: `<script src="/test-app/assets/${scriptName}"></script>`, type: mediaType('.html'), headers: [['Content-Security-Policy', "default-src 'self'"]] }),
});
const assets = staticFiles({
  path: '/test-app/assets/{file}',
  summary: 'Its files',
  types: [mediaType('.js'), mediaType('.css')],
  files: () => {
    loads++;
    return {
      [scriptName]: { body: script, type: mediaType('.js'), immutable: true },
      'app.css': { body: Buffer.from('body{}'), type: mediaType('app.css') },
    };
  },
});

t.test('names and media types', async (t) => {
  t.match(scriptName, /^app\.[0-9a-f]{10}\.js$/);
  t.not(hashedName('app.js', 'other'), scriptName, 'another content, another name');
  t.equal(mediaType('x.css'), 'text/css; charset=utf-8');
  t.throws(() => mediaType('.exe'), /no media type/);
  t.throws(() => staticFiles({ path: '/x', summary: '', types: [], files: () => ({}) }), /must end with a \{parameter\}/);
});

t.test('files are answered with their type and caching, unknown names are 404, the document lists every type', async (t) => {
  const gw = await gatewayWith(t, { ingest: noIngest, clickhouse: noClickHouse }, [...routes, page, assets]);
  const html = await fetch(`${gw.url}/test-app`);
  t.equal(html.status, 200);
  t.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(html.headers.get('cache-control'), 'no-cache');
  t.equal(html.headers.get('content-security-policy'), "default-src 'self'");
  t.match(await html.text(), scriptName);

  const js = await fetch(`${gw.url}/test-app/assets/${scriptName}`);
  t.equal(js.status, 200);
  t.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  t.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  t.equal(js.headers.get('x-content-type-options'), 'nosniff');
  t.equal(await js.text(), script, 'UTF-8 text goes out as UTF-8');

  const css = await fetch(`${gw.url}/test-app/assets/app.css`);
  t.same([css.status, css.headers.get('content-type'), css.headers.get('cache-control'), await css.text()], [200, 'text/css; charset=utf-8', 'no-cache', 'body{}']);

  for (const name of ['nothing.js', 'app.js', '..%2Fpackage.json', '%00']) {
    const missing = await fetch(`${gw.url}/test-app/assets/${name}`);
    t.equal(missing.status, 404, name);
    t.match(await missing.json(), { errors: [{ code: 'not_found' }] });
  }
  t.equal((await fetch(`${gw.url}/test-app/assets/${scriptName}`, { method: 'POST' })).status, 405);
  t.equal(loads, 1, 'the files were loaded once');

  const doc = openApiDocument([page, assets], 'test') as { paths: Record<string, { get: { responses: Record<string, { content: Record<string, unknown> }> } }> };
  t.same(Object.keys(doc.paths['/test-app/assets/{file}']?.get.responses['200']?.content ?? {}), ['text/javascript', 'text/css']);
  t.same(Object.keys(doc.paths['/test-app']?.get.responses['200']?.content ?? {}), ['text/html']);
});

t.test('an async loader runs at the first request, and one that failed is tried again by the next', async (t) => {
  captureStderr(t);
  let attempts = 0;
  const built = staticFiles({
    path: '/built/{file}',
    summary: 'Built files',
    types: [mediaType('.js')],
    files: async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (++attempts === 1) throw new Error('the build failed');
      return { 'a.js': { body: '1', type: mediaType('.js') } };
    },
  });
  const gw = await gatewayWith(t, { ingest: noIngest, clickhouse: noClickHouse }, [...routes, built]);
  t.equal(attempts, 0, 'nothing is built before the first request');
  const first = await fetch(`${gw.url}/built/a.js`);
  t.equal(first.status, 500, 'the first build failed: a bug answered as one');
  await first.arrayBuffer();
  const second = await fetch(`${gw.url}/built/a.js`);
  t.same([second.status, await second.text()], [200, '1'], 'the next request built again');
  t.equal(attempts, 2);
  t.equal((await fetch(`${gw.url}/built/b.js`)).status, 404);
});
