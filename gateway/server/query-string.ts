import type { TObject } from 'typebox';
import type { ErrorItem } from '../../schemas/errors.ts';
import { errorItem, formatMessages, mapErrors } from '../../engine/infra/validation/ajv-errors.ts';
import { compile } from '../../engine/infra/validation/validator.ts';
import type { Checked } from './checked.ts';

/**
 * Query strings of the GET routes and upgrades. Read as application/x-www-form-urlencoded, what
 * URLSearchParams and HTML forms send: `&` separates parameters, `+` is a space, then
 * percent-decoding as UTF-8 (a `+` itself is `%2B`). A value that does not decode, a parameter
 * given twice, an unknown one and one that breaks the schema are each listed as a
 * validation_failed item with `path` `/<name>`, all in one answer. Cursors are checked as the
 * formats `deliveries-cursor`, `events-cursor` and `webhook-attempts-cursor`, so a bad one is
 * listed with the rest.
 */

/** Digits only: turned into a number for an integer parameter; anything else stays text and fails the schema. */
const digits = /^[0-9]{1,15}$/;

/**
 * A checker of one route's query string against `schema` (an object schema whose properties are
 * the parameters), compiled once at start.
 */
export function queryChecker<T>(schema: TObject): (raw: string) => Checked<T> {
  const validate = compile(schema);
  const integers = Object.entries(schema.properties)
    .filter(([, p]) => (p as { type?: unknown }).type === 'integer')
    .map(([name]) => name);
  return (raw) => {
    const { values, errors } = parseQueryString(raw);
    for (const name of integers) {
      const value = values.get(name);
      if (typeof value === 'string' && digits.test(value)) values.set(name, Number(value));
    }
    // fromEntries defines own properties, so a parameter named __proto__ is just an unknown name.
    const object = Object.fromEntries(values);
    if (!validate(object)) {
      // A parameter already reported (undecodable, repeated) is not reported again by the schema.
      const reported = new Set(errors.map((e) => e.path));
      for (const e of validate.errors ?? []) {
        const message = e.keyword === 'format' ? formatMessages[String(e.params['format'])] : undefined;
        if (message !== undefined) e.message = message;
      }
      errors.push(...mapErrors(validate.errors, '').filter((e) => !reported.has(e.path)));
    }
    return errors.length === 0 ? { ok: true, value: object as T } : { ok: false, errors };
  };
}

/** Name -> decoded value (the first, when repeated), and what was wrong with the encoding. */
function parseQueryString(raw: string): { values: Map<string, string | number>; errors: ErrorItem[] } {
  const values = new Map<string, string | number>();
  const errors: ErrorItem[] = [];
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawName = eq === -1 ? part : part.slice(0, eq);
    const name = decode(rawName);
    if (name === null) {
      errors.push(errorItem(`/${pointer(rawName)}`, 'name must be valid percent-encoded UTF-8'));
      continue;
    }
    if (seen.has(name)) {
      if (!repeated.has(name)) errors.push(errorItem(`/${pointer(name)}`, 'must be given once'));
      repeated.add(name);
      continue;
    }
    seen.add(name);
    const value = decode(eq === -1 ? '' : part.slice(eq + 1));
    if (value === null) errors.push(errorItem(`/${pointer(name)}`, 'must be valid percent-encoded UTF-8'));
    else values.set(name, value);
  }
  return { values, errors };
}

/** `since` and `until` as ms since the epoch (the date-time format makes sure they parse). */
export function timeRange(q: { since?: string; until?: string }): { since?: number; until?: number } {
  return {
    ...(q.since === undefined ? {} : { since: Date.parse(q.since) }),
    ...(q.until === undefined ? {} : { until: Date.parse(q.until) }),
  };
}

function decode(text: string): string | null {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/** A JSON pointer token (RFC 6901). */
function pointer(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}
