import type { ErrorObject } from 'ajv';
import type { TwoWayValidator } from './validator.ts';
import type { ErrorItem } from '../../../schemas/errors.ts';

/** Messages of the custom formats, in the words of docs/api.md. */
export const formatMessages: Readonly<Record<string, string>> = {
  instant: 'must be an ISO 8601 date-time with a time zone (2026-11-22T10:00:00Z)',
  'deliveries-cursor': 'must be a next_cursor of GET /api/deliveries, unchanged',
  'events-cursor': 'must be a next_cursor of GET /api/events, unchanged',
  'webhook-attempts-cursor': 'must be a next_cursor of GET /api/webhooks/{id}/attempts, unchanged',
  timezone: 'must be an IANA time zone (Europe/Paris) or an offset from UTC (+05:30)',
};

/**
 * Maps ajv errors to the error items of docs/api.md#errors, shared by every validator (gateway
 * request bodies, ClickHouse filters), and keeps what one answer lists, and costs, bounded.
 */

/** Most error items an answer lists; past it a last item says how many were left out. */
export const MAX_ERROR_ITEMS = 100;

/**
 * Members and items (nested) past which a value is checked only up to its first error. No body,
 * operation or filter entry the API takes comes near it, and listing every violation of a value
 * this large is what made one 1 MiB batch (90 000 bad tags) hold the event loop for seconds.
 */
export const MAX_LISTED_NODES = 1000;

const sizeLimits = new Set(['maxItems', 'maxProperties']);

/** The error items of `value` (none when it is valid): every one, or only the first for a value past MAX_LISTED_NODES. */
export function violations(v: TwoWayValidator, value: unknown, prefix: string): ErrorItem[] {
  if (v.first(value)) return [];
  // A collection over its own limit says enough, without counting it again.
  if (sizeLimits.has(v.first.errors?.[0]?.keyword ?? '') || larger(value, MAX_LISTED_NODES)) return mapErrors(v.first.errors, prefix);
  v.all(value);
  return mapErrors(v.all.errors, prefix);
}

/**
 * True when `value` holds more than `limit` members and items, nested; counting stops there (a
 * for-in, not Object.values, which takes 100 ms on an object of 90 000 members).
 */
function larger(value: unknown, limit: number): boolean {
  let left = limit;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      left -= v.length;
      if (left < 0) return true;
      pending.push(...v);
      continue;
    }
    for (const key in v) {
      if (--left < 0) return true;
      pending.push((v as Record<string, unknown>)[key]);
    }
  }
  return false;
}

/**
 * The errors of the values of one list (batch operations, filter entries): at most
 * MAX_ERROR_ITEMS are kept, and once that many are, the caller only counts what fails.
 */
export class ErrorList {
  private readonly items: ErrorItem[] = [];
  private left = 0;
  /** Values that failed, listed or only counted. */
  failed = 0;

  /** True once MAX_ERROR_ITEMS are listed: check further values only for counting (`countFailure`). */
  get full(): boolean {
    return this.items.length >= MAX_ERROR_ITEMS;
  }

  /** The errors of one failed value (`value` false: of the list itself, counting no value). */
  add(errors: readonly ErrorItem[], value = true): void {
    if (value) this.failed++;
    const room = MAX_ERROR_ITEMS - this.items.length;
    this.items.push(...errors.slice(0, Math.max(room, 0)));
    this.left += Math.max(errors.length - room, 0);
  }

  /** A value that failed after the list was full. */
  countFailure(): void {
    this.failed++;
    this.left++;
  }

  get ok(): boolean {
    return this.items.length === 0;
  }

  /** The items; when some were left out, a last one at `path` says how many `values` failed in all. */
  result(path: string, values: string): ErrorItem[] {
    if (this.left === 0) return this.items;
    const code = this.items[0]?.code ?? 'validation_failed';
    const message = `${pointerName(path)}: ${this.failed} ${values} failed; only the first ${MAX_ERROR_ITEMS} errors are listed`;
    return [...this.items, { code, message, path }];
  }
}

/** At most MAX_ERROR_ITEMS of the errors of one value, and then one saying how many there were. */
export function capped(errors: ErrorItem[], path: string): ErrorItem[] {
  if (errors.length <= MAX_ERROR_ITEMS) return errors;
  const message = `${pointerName(path)}: ${errors.length} errors; only the first ${MAX_ERROR_ITEMS} are listed`;
  return [...errors.slice(0, MAX_ERROR_ITEMS), { code: 'validation_failed', message, path }];
}

function pointerName(path: string): string {
  return path === '' ? 'body' : path.slice(1);
}

/** One validation_failed item: `path` a JSON pointer, `message` `<path>: <what is wrong>`. */
export function errorItem(path: string, message: string): ErrorItem {
  return { code: 'validation_failed', message: `${pointerName(path)}: ${message}`, path };
}

function escapePointer(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Maps ajv errors to error items. An anyOf is reported once: with the errors of the branch whose
 * type matched (a too-long tag string says so), else as "must be string or number" (or "must be
 * one of a, b" for constants) instead of one line per branch.
 */
export function mapErrors(errors: ErrorObject[] | null | undefined, prefix: string): ErrorItem[] {
  const list = errors ?? [];
  // ajv lists an anyOf's branch errors before the anyOf itself; its summary takes the place of the first.
  const consumed = new Set<ErrorObject>();
  const summaries = new Map<ErrorObject, ErrorItem[]>();
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    if (e?.keyword !== 'anyOf') continue;
    // Its branch errors are the run right before it: walking back keeps this linear (a body with
    // thousands of bad values must not cost the event loop quadratic time).
    let start = i;
    while (start > 0 && isBranchOf(list[start - 1], e)) start--;
    const branches = list.slice(start, i);
    for (const b of branches) consumed.add(b);
    consumed.add(e);
    summaries.set(branches[0] ?? e, anyOfItems(e, branches, prefix));
  }
  const out: ErrorItem[] = [];
  for (const e of list) {
    const summary = summaries.get(e);
    if (summary) out.push(...summary);
    // An error with propertyName explains a propertyNames failure, reported once by that keyword.
    else if (!consumed.has(e) && e.propertyName === undefined) out.push(single(e, prefix));
  }
  return out;
}

function isBranchOf(b: ErrorObject | undefined, e: ErrorObject): boolean {
  return (
    b !== undefined &&
    b.schemaPath.startsWith(`${e.schemaPath}/`) &&
    (b.instancePath === e.instancePath || b.instancePath.startsWith(`${e.instancePath}/`))
  );
}

function anyOfItems(e: ErrorObject, branches: ErrorObject[], prefix: string): ErrorItem[] {
  const matched = matchedBranch(branches, e.schemaPath.length + 1, e.instancePath);
  if (matched.length > 0) return matched.map((b) => single(b, prefix));
  const consts = branches.filter((b) => b.keyword === 'const').map((b) => String(b.params['allowedValue']));
  // null only deletes a tag; the API calls tag values strings or numbers (docs/api.md#tags).
  const types = branches.filter((b) => b.keyword === 'type' && b.params['type'] !== 'null').map((b) => String(b.params['type']));
  const message = consts.length > 0 ? `must be one of ${consts.join(', ')}` : `must be ${types.join(' or ')}`;
  return [errorItem(prefix + e.instancePath, message)];
}

/** Errors of the first anyOf branch whose errors are all past a type/const match. */
function matchedBranch(branches: ErrorObject[], cut: number, at: string): ErrorObject[] {
  const byBranch = new Map<string, ErrorObject[]>();
  for (const b of branches) {
    const index = b.schemaPath.slice(cut).split('/')[0] ?? '';
    const group = byBranch.get(index) ?? [];
    group.push(b);
    byBranch.set(index, group);
  }
  for (const group of byBranch.values()) {
    if (group.every((b) => !(b.instancePath === at && (b.keyword === 'type' || b.keyword === 'const')))) return group;
  }
  return [];
}

function single(e: ErrorObject, prefix: string): ErrorItem {
  const path = prefix + e.instancePath;
  switch (e.keyword) {
    case 'required':
      return errorItem(`${path}/${escapePointer(String(e.params['missingProperty']))}`, 'is required');
    case 'additionalProperties':
      return errorItem(`${path}/${escapePointer(String(e.params['additionalProperty']))}`, 'is not allowed');
    case 'propertyNames':
      return errorItem(`${path}/${escapePointer(String(e.params['propertyName']))}`, 'key must be 1 to 128 characters');
    case 'format':
      return errorItem(path, formatMessages[String(e.params['format'])] ?? e.message ?? 'is invalid');
    default:
      return errorItem(path, e.message ?? 'is invalid');
  }
}
