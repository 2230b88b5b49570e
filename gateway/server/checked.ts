import type { ErrorItem } from '../../schemas/errors.ts';
import { capped, violations } from '../../engine/infra/validation/ajv-errors.ts';
import { compileTwoWay, type TwoWayValidator } from '../../engine/infra/validation/validator.ts';

/** A checked value, or every violation found (paths are JSON pointers into the body). */
export type Checked<T> = { ok: true; value: T } | { ok: false; errors: ErrorItem[] };

export type Check<T> = (value: unknown, prefix?: string) => Checked<T>;

/** A checker of one schema: every violation, at most MAX_ERROR_ITEMS listed (engine/infra/validation/ajv-errors.ts). */
export function schemaCheck<T>(schema: object): Check<T> {
  const v = compileTwoWay(schema);
  return (value, prefix = '') => checkWith<T>(v, value, prefix);
}

/** `value` checked by a compiled validator; `prefix` is prepended to every error path. */
export function checkWith<T>(v: TwoWayValidator, value: unknown, prefix: string): Checked<T> {
  const errors = violations(v, value, prefix);
  return errors.length === 0 ? { ok: true, value: value as T } : { ok: false, errors: capped(errors, prefix) };
}
