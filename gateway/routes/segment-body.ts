import { capped, violations } from '../../engine/infra/validation/ajv-errors.ts';
import { checkFilters } from '../../engine/infra/clickhouse/filters/check.ts';
import { compileTwoWay } from '../../engine/infra/validation/validator.ts';
import type { FilterEntry } from '../../schemas/filters.ts';
import { SegmentEnvelope } from '../../schemas/segments.ts';
import type { Checked } from '../server/checked.ts';

const envelope = compileTwoWay(SegmentEnvelope);

/** A segment body: the envelope (name, no other fields) and the filters entry by entry, each list of violations bounded. */
export function checkSegmentBody(body: unknown): Checked<{ name: string; filters: FilterEntry[] }> {
  const errors = capped(violations(envelope, body, ''), '');
  const value = isObject(body) ? body : {};
  const filters = value['filters'] === undefined ? null : checkFilters(value['filters'], '/filters');
  if (filters !== null && !filters.ok) errors.push(...filters.errors);
  if (errors.length > 0 || filters === null || !filters.ok) return { ok: false, errors };
  return { ok: true, value: { name: value['name'] as string, filters: filters.value } };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
