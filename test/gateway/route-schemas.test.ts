import t from 'tap';
import Type from 'typebox';
import { declaredAnswers } from '../../gateway/server/answers.ts';
import { httpRoute, routeErrors, socketRoute, type Route } from '../../gateway/server/route.ts';
import { routes } from '../../gateway/routes/table.ts';
import { compile, compileFirst } from '../../engine/infra/validation/validator.ts';
import { ErrorCodes } from '../../schemas/errors.ts';

/**
 * Schemas are compiled on first use (engine/infra/validation/validator.ts), so a schema Ajv refuses would show only
 * at the first request that meets it. This compiles every schema of the route table at once, with
 * the engine's compiler in both its modes: path parameters, query, body and every answer (the
 * declared success answers and the error bodies derived from the route's error codes).
 */

interface Schema {
  route: string;
  /** Where the route holds it: `params`, `query`, `body`, `answer <status>`, `error <status>`. */
  slot: string;
  schema: object;
}

/** Every schema a route of `table` holds: those it declares, then its derived error bodies. */
function schemasOf(table: readonly Route[]): { declared: Schema[]; derived: Schema[] } {
  const declared: Schema[] = [];
  const derived: Schema[] = [];
  for (const route of table) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    const add = (list: Schema[], slot: string, schema: object | undefined): void => {
      if (schema !== undefined) list.push({ route: name, slot, schema });
    };
    if (route.kind === 'http') add(declared, 'params', route.params);
    add(declared, 'query', route.query);
    if (route.kind === 'http') add(declared, 'body', route.body?.schema);
    for (const answer of declaredAnswers(route)) add(answer.codes.length === 0 ? declared : derived, `${answer.codes.length === 0 ? 'answer' : 'error'} ${answer.status}`, answer.schema);
  }
  return { declared, derived };
}

/**
 * Compiles each schema in both modes of engine/infra/validation/validator.ts: one problem per schema and mode that
 * does not compile. The checks compile on their first call, so each is called once.
 */
function compileProblems(schemas: readonly Schema[]): string[] {
  const problems: string[] = [];
  for (const { route, slot, schema } of schemas) {
    for (const [mode, check] of [
      ['every error', compile(schema)],
      ['first error', compileFirst(schema)],
    ] as const) {
      try {
        check(undefined);
      } catch (err) {
        problems.push(`${route} ${slot} (${mode}): ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  return problems;
}

t.test('every schema of the route table compiles, in both modes of the engine’s compiler', async (t) => {
  const { declared, derived } = schemasOf(routes);
  t.ok(routes.length > 0, `${routes.length} routes`);
  t.same(new Set(declared.concat(derived).map((s) => s.route)).size, routes.length, 'every route of the table is checked');

  // What the table holds, counted from the declarations themselves.
  const declaredInTable = routes.reduce(
    (n, r) => n + (r.kind === 'http' && r.params ? 1 : 0) + (r.query ? 1 : 0) + (r.kind === 'http' && r.body ? 1 : 0) + Object.keys(r.answers).length,
    0,
  );
  const errorStatuses = routes.reduce((n, r) => n + new Set(routeErrors(r).map((c) => ErrorCodes[c].status)).size, 0);
  t.ok(declared.length > 0, `${declared.length} declared schemas`);
  t.equal(declared.length, declaredInTable, 'every declared schema (params, query, body, success answers) is checked');
  t.equal(derived.length, errorStatuses, 'and one error body per error status of each route');
  for (const slot of ['params', 'query', 'body', 'answer']) t.ok(declared.some((s) => s.slot.startsWith(slot)), `the table holds some ${slot} schema`);

  t.same(compileProblems([...declared, ...derived]), [], `all ${declared.length + derived.length} compile, each in both modes`);
});

t.test('the checker reports a broken schema wherever a route holds it', async (t) => {
  // A new object each time, as each route declares its own (Ajv keeps what it has seen of an object).
  const broken = (): ReturnType<typeof Type.Object> => ({ type: 'nope' }) as unknown as ReturnType<typeof Type.Object>;
  const handler = () => () => undefined;
  const table: Route[] = [
    httpRoute({ method: 'get', path: '/broken/params/{id}', auth: 'none', summary: 'x', params: broken(), answers: { 200: Type.Object({}) }, handler }),
    httpRoute({ method: 'get', path: '/broken/query', auth: 'none', summary: 'x', query: broken(), answers: { 200: Type.Object({}) }, handler }),
    httpRoute({ method: 'post', path: '/broken/body', auth: 'none', summary: 'x', body: { schema: broken(), limit: 1024 }, answers: { 200: Type.Object({}) }, handler }),
    httpRoute({ method: 'get', path: '/broken/answer', auth: 'none', summary: 'x', answers: { 200: broken() }, handler }),
    socketRoute({ path: '/broken/socket', summary: 'x', query: broken(), answers: { 101: Type.Object({}) }, channel: () => ({}) as never }),
    // An unknown format is refused as well: every format a route uses must be registered.
    httpRoute({ method: 'get', path: '/broken/format', auth: 'none', summary: 'x', answers: { 200: Type.String({ format: 'no-such-format' }) }, handler }),
    httpRoute({ method: 'get', path: '/fine', auth: 'none', summary: 'x', query: Type.Object({ n: Type.Integer() }), answers: { 200: Type.Object({}) }, handler }),
  ];
  const { declared, derived } = schemasOf(table);
  const problems = compileProblems([...declared, ...derived]);
  const expected = [
    'GET /broken/params/{id} params',
    'GET /broken/query query',
    'POST /broken/body body',
    'GET /broken/answer answer 200',
    'GET /broken/socket query',
    'GET /broken/format answer 200',
  ];
  for (const where of expected) {
    const found = problems.filter((p) => p.startsWith(`${where} `));
    t.equal(found.length, 2, `${where}: reported once in each mode`);
    t.ok(
      found.every((p) => /\((every|first) error\): .*(schema is invalid|unknown format)/.test(p)),
      `${where}: as Ajv's refusal: ${found.join('; ')}`,
    );
  }
  t.equal(problems.length, expected.length * 2, 'nothing else is reported: the fine route and the derived error bodies compile');
});
