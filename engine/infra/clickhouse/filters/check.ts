// The one mapping of ajv errors to docs/api.md#errors items, so filter errors read like every other.
import { ErrorList, mapErrors, violations } from '../../validation/ajv-errors.ts';
import { compileTwoWay as twoWay, type TwoWayValidator } from '../../validation/validator.ts';
import type { ErrorItem } from '../../../../schemas/errors.ts';
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
} from '../../../../schemas/filters.ts';

/** A checked filter list, or every problem found, each naming its entry (`/filters/3/relation`). */
export type CheckedFilters = { ok: true; value: FilterEntry[] } | { ok: false; errors: ErrorItem[] };

// Compiled once per process (docs/architecture.md#validators-compiled-once).
const byRelation = new Map<string, TwoWayValidator>([
  ...TagCompareRelations.map((r) => [r, twoWay(TagCompareCondition)] as const),
  ['in', twoWay(TagInCondition)],
  ['exists', twoWay(TagExistsCondition)],
  ['not_exists', twoWay(TagExistsCondition)],
]);
const event = twoWay(EventCondition);
const subscription = twoWay(SubscriptionCondition);
const or = twoWay(OrOperator);
const fields = ['tag', 'event', 'subscription'];

/**
 * Checks a filter list (docs/api.md#filters-and-segments). Each entry is checked against the schema of its own kind
 * (picked by `field`, and `relation` for tags), so the errors name that kind's rules only; then
 * the placement rules a schema cannot express: an OR may not come first, last, or next to another
 * OR. `prefix` is the JSON pointer of the list in the request body. At most MAX_ERROR_ITEMS errors
 * are listed; past them entries are only counted, and a last item says how many failed.
 */
export function checkFilters(value: unknown, prefix = '/filters'): CheckedFilters {
  if (!Array.isArray(value)) return fail([item(prefix, 'must be array')]);
  if (value.length === 0) return fail([item(prefix, 'must have at least 1 condition')]);
  // Checked before the entries, so an oversized list costs nothing more.
  if (value.length > FilterLimits.entries) return fail([item(prefix, `must have at most ${FilterLimits.entries} entries`)]);
  const list = new ErrorList();
  for (let i = 0; i < value.length; i++) {
    const errors = entryErrors(value, i, `${prefix}/${i}`, list.full);
    if (errors.length === 0) continue;
    if (list.full) list.countFailure();
    else list.add(errors);
  }
  return list.ok ? { ok: true, value: value as FilterEntry[] } : fail(list.result(prefix, 'entries'));
}

/** The errors of entry `i` of `entries`; `firstOnly`: at most one, enough to count it as failed. */
function entryErrors(entries: unknown[], i: number, at: string, firstOnly: boolean): ErrorItem[] {
  const entry = entries[i];
  if (!isObject(entry)) return [item(at, 'must be object')];
  if (!('operator' in entry)) return checkCondition(entry, at, firstOnly);
  // Only OR separates groups (AND is implied between conditions); say so rather than "constant".
  if (entry['operator'] !== 'OR') return [item(`${at}/operator`, 'must be OR (conditions next to each other are ANDed)')];
  const errors = check(or, entry, at, firstOnly);
  if (errors.length > 0) return errors;
  if (i === 0 || i === entries.length - 1) return [item(at, 'an OR must stand between two conditions, not first or last')];
  if (isOr(entries[i - 1])) return [item(at, 'an OR must not follow another OR')];
  return [];
}

function checkCondition(entry: Record<string, unknown>, at: string, firstOnly: boolean): ErrorItem[] {
  const kind = entry['field'];
  if (kind === 'event') return check(event, entry, at, firstOnly);
  if (kind === 'subscription') return check(subscription, entry, at, firstOnly);
  if (kind !== 'tag') {
    const message = kind === undefined ? 'is required (or use {"operator":"OR"})' : `must be one of ${fields.join(', ')}`;
    return [item(`${at}/field`, message)];
  }
  const relation = entry['relation'];
  const v = typeof relation === 'string' ? byRelation.get(relation) : undefined;
  if (!v) return [item(`${at}/relation`, relation === undefined ? 'is required' : `must be one of ${TagRelations.join(', ')}`)];
  return check(v, entry, at, firstOnly);
}

function check(v: TwoWayValidator, value: unknown, at: string, firstOnly: boolean): ErrorItem[] {
  if (!firstOnly) return violations(v, value, at);
  return v.first(value) ? [] : mapErrors(v.first.errors, at);
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
