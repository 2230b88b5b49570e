import { Ajv, type ValidateFunction } from 'ajv';
// The one mapping of ajv errors to API.md section 2 items, so filter errors read like every other.
import { mapErrors } from '../../ajv-errors.ts';
import type { ErrorItem } from '../../../schemas/errors.ts';
import {
  EventCondition,
  FilterLimits,
  OrOperator,
  SubscriptionCondition,
  TagCompareCondition,
  TagCompareRelations,
  TagExistsCondition,
  TagInCondition,
  TagRelations,
  type FilterEntry,
} from '../../../schemas/filters.ts';

/** A checked filter list, or every problem found, each naming its entry (`/filters/3/relation`). */
export type CheckedFilters = { ok: true; value: FilterEntry[] } | { ok: false; errors: ErrorItem[] };

// Compiled once per process (STYLE.md 6).
const ajv = new Ajv({ allErrors: true });
const byRelation = new Map<string, ValidateFunction>([
  ...TagCompareRelations.map((r) => [r, ajv.compile(TagCompareCondition)] as const),
  ['in', ajv.compile(TagInCondition)],
  ['exists', ajv.compile(TagExistsCondition)],
  ['not_exists', ajv.compile(TagExistsCondition)],
]);
const event = ajv.compile(EventCondition);
const subscription = ajv.compile(SubscriptionCondition);
const or = ajv.compile(OrOperator);
const fields = ['tag', 'event', 'subscription'];

/**
 * Checks an API.md 4.1 filter list. Each entry is checked against the schema of its own kind
 * (picked by `field`, and `relation` for tags), so the errors name that kind's rules only; then
 * the placement rules a schema cannot express: an OR may not come first, last, or next to another
 * OR. `prefix` is the JSON pointer of the list in the request body.
 */
export function checkFilters(value: unknown, prefix = '/filters'): CheckedFilters {
  if (!Array.isArray(value)) return fail([item(prefix, 'must be array')]);
  if (value.length === 0) return fail([item(prefix, 'must have at least 1 condition')]);
  // Checked before the entries, so an oversized list costs nothing more.
  if (value.length > FilterLimits.entries) return fail([item(prefix, `must have at most ${FilterLimits.entries} entries`)]);
  const errors: ErrorItem[] = [];
  value.forEach((entry: unknown, i) => {
    const at = `${prefix}/${i}`;
    if (!isObject(entry)) {
      errors.push(item(at, 'must be object'));
      return;
    }
    if ('operator' in entry) {
      // Only OR separates groups (AND is implied between conditions); say so rather than "constant".
      if (entry['operator'] !== 'OR') errors.push(item(`${at}/operator`, 'must be OR (conditions next to each other are ANDed)'));
      else if (!or(entry)) errors.push(...mapErrors(or.errors, at));
      else if (i === 0 || i === value.length - 1) errors.push(item(at, 'an OR must stand between two conditions, not first or last'));
      else if (isOr(value[i - 1])) errors.push(item(at, 'an OR must not follow another OR'));
      return;
    }
    errors.push(...checkCondition(entry, at));
  });
  return errors.length > 0 ? fail(errors) : { ok: true, value: value as FilterEntry[] };
}

function checkCondition(entry: Record<string, unknown>, at: string): ErrorItem[] {
  const kind = entry['field'];
  if (kind === 'event') return event(entry) ? [] : mapErrors(event.errors, at);
  if (kind === 'subscription') return subscription(entry) ? [] : mapErrors(subscription.errors, at);
  if (kind !== 'tag') {
    const message = kind === undefined ? 'is required (or use {"operator":"OR"})' : `must be one of ${fields.join(', ')}`;
    return [item(`${at}/field`, message)];
  }
  const relation = entry['relation'];
  const fn = typeof relation === 'string' ? byRelation.get(relation) : undefined;
  if (!fn) return [item(`${at}/relation`, relation === undefined ? 'is required' : `must be one of ${TagRelations.join(', ')}`)];
  return fn(entry) ? [] : mapErrors(fn.errors, at);
}

function isOr(entry: unknown): boolean {
  return isObject(entry) && 'operator' in entry;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function item(path: string, message: string): ErrorItem {
  return { code: 'validation_failed', message: `${path.slice(1)}: ${message}`, path };
}

function fail(errors: ErrorItem[]): CheckedFilters {
  return { ok: false, errors };
}
