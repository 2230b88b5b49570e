import type { ErrorObject } from 'ajv';
import type { ErrorItem } from '../schemas/errors.ts';

/**
 * Maps ajv errors to the error items of API.md section 2, shared by every validator (gateway
 * request bodies, ClickHouse filters).
 */

/** One validation_failed item: `path` a JSON pointer, `message` `<path>: <what is wrong>`. */
export function errorItem(path: string, message: string): ErrorItem {
  return { code: 'validation_failed', message: `${path === '' ? 'body' : path.slice(1)}: ${message}`, path };
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
  // null only deletes a tag; the API calls tag values strings or numbers (API.md section 2 example).
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
    default:
      return errorItem(path, e.message ?? 'is invalid');
  }
}
