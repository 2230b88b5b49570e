import type { TObject } from 'typebox';
import { errorItem, mapErrors } from '../../engine/infra/validation/ajv-errors.ts';
import { compile } from '../../engine/infra/validation/validator.ts';
import type { ErrorItem } from '../../schemas/errors.ts';
import { schemaCheck, type Checked } from './checked.ts';
import { queryChecker } from './query-string.ts';
import { paramNames, type HttpRoute } from './route.ts';

/** What a request brings, still raw (uWS request objects live one call). */
export interface RawRequest {
  /** Path parameters in path order, still percent-encoded. */
  params: string[];
  /** The query string without `?`, '' when absent. */
  query: string;
}

export interface CheckedRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

/**
 * The checks of one route, compiled once at start from its declaration: path parameters, query
 * string, body. Every violation of the three is listed in one answer, in that order. A WebSocket
 * route declares a query at most.
 */
export function requestCheck(route: Pick<HttpRoute, 'path' | 'params' | 'query' | 'body'>): (raw: RawRequest, body: unknown) => Checked<CheckedRequest> {
  const params = route.params && paramsCheck(route.path, route.params);
  const query = route.query && queryChecker<Record<string, unknown>>(route.query);
  const body = route.body && (route.body.check ?? schemaCheck(route.body.schema));
  return (raw, value) => {
    const errors: ErrorItem[] = [];
    const valueOf = <T>(result: Checked<T> | undefined, empty: T): T => {
      if (result === undefined) return empty;
      if (result.ok) return result.value;
      errors.push(...result.errors);
      return empty;
    };
    const out: CheckedRequest = {
      params: valueOf(params?.(raw.params), {}),
      query: valueOf(query?.(raw.query), {}),
      body: valueOf(body?.(value), undefined),
    };
    return errors.length === 0 ? { ok: true, value: out } : { ok: false, errors };
  };
}

/**
 * Path parameters: percent-decoded, then checked against their schema; a length violation reads
 * "must be 1 to 128 characters" (docs/api.md#limits), naming the parameter as `/<name>`.
 */
function paramsCheck(path: string, schema: TObject): (raw: string[]) => Checked<Record<string, string>> {
  const names = paramNames(path);
  const validate = compile(schema);
  const lengths = (name: string): string => {
    const p = schema.properties[name] as { minLength?: number; maxLength?: number } | undefined;
    return `must be ${p?.minLength ?? 0} to ${p?.maxLength ?? 'any number of'} characters`;
  };
  return (raw) => {
    const errors: ErrorItem[] = [];
    const value: Record<string, string> = {};
    names.forEach((name, i) => {
      try {
        value[name] = decodeURIComponent(raw[i] ?? '');
      } catch {
        errors.push(errorItem(`/${name}`, 'must be valid percent-encoded UTF-8'));
      }
    });
    if (errors.length === 0 && !validate(value)) {
      for (const e of validate.errors ?? []) {
        if (e.keyword === 'minLength' || e.keyword === 'maxLength') e.message = lengths(e.instancePath.slice(1));
      }
      errors.push(...mapErrors(validate.errors, ''));
    }
    return errors.length === 0 ? { ok: true, value } : { ok: false, errors };
  };
}
