import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { readDeliveryCursor, readEventCursor, readWebhookAttemptCursor } from './cursor.ts';
import { isTimeZone } from '../process/local-time.ts';

/**
 * The process's one schema compiler: every request, answer, filter, credential and stream-entry
 * schema is compiled here, once, with the same formats, on its first use: a process compiles only
 * what its roles and callers meet (compiling every route's schemas took a second of CPU at each
 * start). It has two modes because listing every violation of a huge value is what made one bad
 * 1 MiB batch hold the event loop for seconds (engine/infra/validation/ajv-errors.ts checks such values to their
 * first error only).
 */
const allErrors = new Ajv({ allErrors: true });
const firstError = new Ajv();

/**
 * `instant`: an RFC 3339 date-time that Date.parse reads (a leap second is refused), for query
 * bounds. Bodies keep `date-time`, where a leap second is placed at the next minute.
 */
const rfc3339 = (() => {
  const formats = new Ajv();
  addFormats.default(formats, ['date-time']);
  return formats.compile<string>({ type: 'string', format: 'date-time' });
})();

for (const ajv of [allErrors, firstError]) {
  addFormats.default(ajv);
  ajv.addFormat('instant', { type: 'string', validate: (s: string) => rfc3339(s) && !Number.isNaN(Date.parse(s)) });
  ajv.addFormat('deliveries-cursor', { type: 'string', validate: (s: string) => readDeliveryCursor(s) !== null });
  ajv.addFormat('events-cursor', { type: 'string', validate: (s: string) => readEventCursor(s) !== null });
  ajv.addFormat('webhook-attempts-cursor', { type: 'string', validate: (s: string) => readWebhookAttemptCursor(s) !== null });
  ajv.addFormat('timezone', { type: 'string', validate: isTimeZone });
}

/** A schema's check: true when `data` matches; `errors` holds the violations of the last call. */
export interface Check<T = unknown> {
  (data: unknown): data is T;
  errors: ErrorObject[] | null | undefined;
}

/** One schema compiled twice: `first` stops at the first error (cheap), `all` lists every one. */
export interface TwoWayValidator {
  first: Check;
  all: Check;
}

/** A check that compiles its schema when first called. */
function onFirstUse<T>(make: () => ValidateFunction<T>): Check<T> {
  let compiled: ValidateFunction<T> | undefined;
  const check = (data: unknown): data is T => {
    compiled ??= make();
    const ok = compiled(data);
    check.errors = compiled.errors;
    return ok;
  };
  check.errors = undefined as ErrorObject[] | null | undefined;
  return check;
}

/** A validator that lists every violation. */
export function compile<T = unknown>(schema: object): Check<T> {
  return onFirstUse(() => allErrors.compile<T>(schema));
}

/** A validator in both modes, for values that may be huge (engine/infra/validation/ajv-errors.ts violations). */
export function compileTwoWay(schema: object): TwoWayValidator {
  return { first: compileFirst(schema), all: compile(schema) };
}

/** A validator that stops at the first violation: for values only checked, never explained. */
export function compileFirst<T = unknown>(schema: object): Check<T> {
  return onFirstUse(() => firstError.compile<T>(schema));
}
