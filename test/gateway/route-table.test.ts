import t from 'tap';
import Type from 'typebox';
import { declaredAnswers } from '../../gateway/server/answers.ts';
import { openApiDocument } from '../../gateway/server/openapi.ts';
import { httpRoute, paramNames, routeErrors, successAnswers, type Route } from '../../gateway/server/route.ts';
import { routes } from '../../gateway/routes/table.ts';
import { ErrorCodes } from '../../schemas/errors.ts';
import { UnavailableError } from '../../schemas/errors.ts';
import { captureStderr, gatewayWith } from '../helpers/gateway-app.ts';
import { call } from '../helpers/http.ts';

/** The route table is the one declaration of the API: what is derived from it, and what it refuses. */

interface Operation {
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, { content: Record<string, { schema: { properties?: { errors?: { items?: { properties: { code: { anyOf: { const: string }[] } } } } } } }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

const doc = openApiDocument(routes, 'test') as unknown as Document;
const noClickHouse = { get: () => Promise.reject(new UnavailableError('no ClickHouse in this test')), ping: () => Promise.resolve(false) };
const noIngest = { write: () => Promise.resolve() };

t.test('every route declares a success answer and is in the document with its parameters and every answer', async (t) => {
  t.ok(routes.length >= 20);
  for (const route of routes) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    t.ok(successAnswers(route).length > 0, `${name} declares a success answer`);
    const op = doc.paths[route.path]?.[route.method];
    if (!op) {
      t.fail(`${name} is missing from the document`);
      continue;
    }
    for (const p of paramNames(route.path)) t.ok(op.parameters?.some((q) => q.name === p && q.in === 'path'), `${name}: path parameter ${p}`);
    if (route.kind === 'http' && route.query) {
      for (const q of Object.keys(route.query.properties)) t.ok(op.parameters?.some((x) => x.name === q && x.in === 'query'), `${name}: query ${q}`);
    }
    t.equal(op.requestBody !== undefined, route.kind === 'http' && route.body !== undefined, `${name}: request body documented iff declared`);
    t.same(Object.keys(op.responses).map(Number).sort(), declaredAnswers(route).map((a) => a.status).sort(), `${name}: every declared answer documented`);
  }
  const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path}`));
  t.same(documented.sort(), routes.map((r) => `${r.method} ${r.path}`).sort(), 'the document holds the table and nothing else');
});

t.test('every error code of the registry is an answer of some route in the document', async (t) => {
  const codes = new Set<string>();
  for (const methods of Object.values(doc.paths)) {
    for (const op of Object.values(methods)) {
      for (const answer of Object.values(op.responses)) {
        for (const branch of answer.content['application/json']?.schema.properties?.errors?.items?.properties.code.anyOf ?? []) codes.add(branch.const);
      }
    }
  }
  for (const code of Object.keys(ErrorCodes)) t.ok(codes.has(code), `${code} is documented`);
  t.same([...codes].filter((c) => !(c in ErrorCodes)), [], 'and nothing outside the registry');
});

t.test('errors derive from auth, body and parameters', async (t) => {
  const byPath = (method: string, path: string): Route => routes.find((r) => r.method === method && r.path === path) as Route;
  t.same(routeErrors(byPath('get', '/healthz')), ['method_not_allowed', 'internal']);
  t.match(routeErrors(byPath('get', '/api/users/{external_id}')), ['validation_failed', 'missing_key', 'invalid_key', 'wrong_key_type', 'not_found']);
  t.notOk(routeErrors(byPath('post', '/api/sdk/events')).includes('wrong_key_type'), 'an SDK route takes SDK keys');
  t.ok(routeErrors(byPath('post', '/api/sdk/events')).includes('payload_too_large'));
});

t.test('a table with a route that declares no success answer is refused at start', async (t) => {
  const silent = httpRoute({ method: 'get', path: '/silent', auth: 'none', summary: 'answers nothing declared', answers: {}, handler: () => () => undefined });
  await t.rejects(gatewayWith(t, { ingest: noIngest, clickhouse: noClickHouse }, [...routes, silent]), /GET \/silent declares no success answer/);
});

t.test('an answer that breaks its declared schema is a 500 with an error id and a logged stack', async (t) => {
  const logs = captureStderr(t);
  const wrong = httpRoute({
    method: 'get',
    path: '/api/wrong/{id}',
    auth: 'none',
    summary: 'answers what it did not declare',
    params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 8 }) }),
    answers: { 200: Type.Object({ ok: Type.Literal(true) }, { additionalProperties: false }) },
    handler:
      () =>
      ({ ex, params }) =>
        params.id === 'status' ? ex.send(201, '{"ok":true}') : ex.send(200, params.id === 'good' ? '{"ok":true}' : '{"ok":1}'),
  });
  const gw = await gatewayWith(t, { ingest: noIngest, clickhouse: noClickHouse }, [...routes, wrong]);
  t.same((await call(`${gw.url}/api/wrong/good`, 'GET', null)).body, { ok: true }, 'a matching answer goes out');
  for (const id of ['bad', 'status']) {
    const answer = await call(`${gw.url}/api/wrong/${id}`, 'GET', null);
    t.equal(answer.status, 500, `${id}: 500`);
    const item = (answer.body as { errors: { code: string; error_id: string }[] }).errors[0];
    t.equal(item?.code, 'internal');
    t.match(
      logs.find((l) => l['error_id'] === item?.error_id),
      { level: 'error', err: { message: id === 'bad' ? /GET \/api\/wrong\/\{id\} answer: body breaks its schema/ : /status 201 is not declared/ } },
    );
  }
  const param = await call(`${gw.url}/api/wrong/toolongtobevalid`, 'GET', null);
  t.same([param.status, param.body], [400, { errors: [{ code: 'validation_failed', message: 'id: must be 1 to 8 characters', path: '/id' }] }], 'its parameter is checked from its schema');
  const other = await call(`${gw.url}/api/wrong/good`, 'POST', null);
  t.same([other.status, other.headers.get('allow')], [405, 'GET'], 'another method: 405 with Allow from the table');
  const doc2 = (await call(`${gw.url}/api/openapi.json`, 'GET', null)).body as Document;
  t.ok(doc2.paths['/api/wrong/{id}']?.['get'], 'the served document holds the added route');
});

t.test('OPTIONS and Allow list every method a path declares', async (t) => {
  const gw = await gatewayWith(t, { ingest: noIngest, clickhouse: noClickHouse });
  const preflight = await call(`${gw.url}/api/segments`, 'OPTIONS', null);
  t.same([preflight.status, preflight.headers.get('access-control-allow-methods')], [204, 'GET, POST']);
  const patch = await call(`${gw.url}/api/segments/x`, 'PATCH', null);
  t.same([patch.status, patch.headers.get('allow')], [405, 'GET, DELETE']);
  t.equal((await call(`${gw.url}/api/nothing-here`, 'GET', null)).status, 404);
});

t.test('every operation has its own operationId, without `_` (Swagger UI deep links refuse it)', async (t) => {
  const ids = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((op) => (op as { operationId?: string }).operationId ?? ''));
  t.equal(new Set(ids).size, ids.length, 'unique');
  t.same(ids.filter((id) => !/^[a-z]+[A-Za-z0-9]+$/.test(id)), []);
  t.ok(ids.includes('getSegmentsNameCount'));
});
