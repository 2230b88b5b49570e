import Type, { type TSchema } from 'typebox';
import { compile } from '../engine/validator.ts';
import { ErrorCodes, type ErrorCode } from '../schemas/errors.ts';
import type { Failures } from './failure.ts';
import type { AnswerCheck } from './http.ts';
import { routeErrors, successAnswers, type Route } from './route.ts';

/** One answer a route may give: its status, media type, schema, and for errors the codes it may carry. */
export interface DeclaredAnswer {
  status: number;
  contentType: string;
  schema: TSchema;
  codes: ErrorCode[];
}

/** The error body of API.md section 2, its `code` narrowed to `codes`. */
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
    ...successAnswers(route).map(([status, a]) => ({ status, contentType: a.contentType, schema: a.schema, codes: [] })),
    ...[...byStatus].map(([status, codes]) => ({ status, contentType: 'application/json', schema: errorBody(codes), codes })),
  ];
}

/**
 * Checks each answer of `route` against its declaration (development and tests: CHECK_ANSWERS). An
 * undeclared status, another media type, or a JSON body that breaks its schema is logged as a bug
 * and answered 500 `internal` instead, so no test can pass on an answer the document does not describe.
 */
export function answerCheck(route: Route, failures: Pick<Failures, 'outcome'>): AnswerCheck {
  const checks = new Map(
    declaredAnswers(route).map((a) => [a.status, { contentType: a.contentType, validate: a.contentType === 'application/json' ? compile(a.schema) : null }]),
  );
  const what = `${route.method.toUpperCase()} ${route.path} answer`;
  return (status, contentType, body) => {
    const declared = checks.get(status);
    let problem: string | null = null;
    if (declared === undefined) problem = `status ${status} is not declared`;
    else if (!contentType.startsWith(declared.contentType)) problem = `${contentType} is not the declared ${declared.contentType}`;
    else if (declared.validate !== null && !declared.validate(parse(body))) {
      problem = `body breaks its schema: ${JSON.stringify(declared.validate.errors?.slice(0, 3))}`;
    }
    return problem === null ? null : failures.outcome(what, new Error(`${what}: ${problem}; body ${body.slice(0, 300)}`));
  };
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return Symbol('not JSON');
  }
}
