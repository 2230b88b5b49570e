import Type, { type TSchema } from 'typebox';
import { compile } from '../../engine/infra/validation/validator.ts';
import { ErrorCodes, type ErrorCode } from '../../schemas/errors.ts';
import { JSON_TYPE, type AnswerCheck } from './exchange.ts';
import type { Failures } from './failure.ts';
import { routeErrors, successAnswers, type Route } from './route.ts';

/** One answer a route may give: its status, media types, schema, and for errors the codes it may carry. */
export interface DeclaredAnswer {
  status: number;
  contentTypes: readonly string[];
  schema: TSchema;
  codes: ErrorCode[];
}

/** The error body (docs/api.md#errors), its `code` narrowed to `codes`. */
export function errorBody(codes: readonly ErrorCode[]): TSchema {
  return Type.Object({
    errors: Type.Array(
      Type.Object({
        code: Type.Union(codes.map((c) => Type.Literal(c))),
        message: Type.String(),
        path: Type.Optional(Type.String()),
        error_id: Type.Optional(Type.String({ description: 'internal only: marks the server log line with the stack' })),
      }),
      { minItems: 1 },
    ),
  });
}

/** Every answer of a route: its success answers, then one error answer per status of its error codes. */
export function declaredAnswers(route: Route): DeclaredAnswer[] {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrors(route)) {
    const status: number = ErrorCodes[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return [
    ...successAnswers(route).map(([status, a]) => ({ status, contentTypes: a.contentTypes, schema: a.schema, codes: [] })),
    ...[...byStatus].map(([status, codes]) => ({ status, contentTypes: [JSON_TYPE], schema: errorBody(codes), codes })),
  ];
}

/**
 * Checks each answer of `route` against its declaration (development and tests: CHECK_ANSWERS). An
 * undeclared status, another media type, or a JSON body that breaks its schema is logged as a bug
 * and answered 500 `internal` instead, so no test can pass on an answer the document does not describe.
 */
export function answerCheck(route: Route, failures: Pick<Failures, 'outcome'>): AnswerCheck {
  const checks = new Map(
    declaredAnswers(route).map((a) => [a.status, { types: a.contentTypes, validate: a.contentTypes.includes(JSON_TYPE) ? compile(a.schema) : null }]),
  );
  const what = `${route.method.toUpperCase()} ${route.path} answer`;
  return (status, contentType, body) => {
    const declared = checks.get(status);
    let problem: string | null = null;
    if (declared === undefined) problem = `status ${status} is not declared`;
    else if (!declared.types.some((t) => contentType.startsWith(t))) problem = `${contentType} is not the declared ${declared.types.join(' or ')}`;
    else if (declared.validate !== null && contentType.startsWith(JSON_TYPE) && !declared.validate(parse(body))) {
      problem = `body breaks its schema: ${JSON.stringify(declared.validate.errors?.slice(0, 3))}`;
    }
    return problem === null ? null : failures.outcome(what, new Error(`${what}: ${problem}; body ${text(body.slice(0, 300))}`));
  };
}

function text(body: string | Uint8Array): string {
  return typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
}

function parse(body: string | Uint8Array): unknown {
  try {
    return JSON.parse(text(body));
  } catch {
    return Symbol('not JSON');
  }
}
