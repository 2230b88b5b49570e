// The module resolution hooks of ./import-guard.js; they run on Node's loader thread.
import { appendFileSync } from 'node:fs';

/** @type {string[]} */
let refuse = [];
let record = '';

/** @param {{ refuse: string[], record: string }} data */
export function initialize(data) {
  refuse = data.refuse;
  record = data.record;
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; null for a relative, absolute or builtin specifier. */
function packageName(specifier) {
  if (/^(\.|\/|[a-z]+:)/.test(specifier)) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? null);
}

export async function resolve(specifier, context, nextResolve) {
  const name = packageName(specifier);
  if (name !== null && refuse.includes(name)) {
    // As Node fails for a package that is not installed.
    const err = new Error(`import-guard: cannot find package "${name}" imported from ${context.parentURL ?? 'the command line'} (refused)`);
    throw Object.assign(err, { code: 'ERR_MODULE_NOT_FOUND' });
  }
  const resolved = await nextResolve(specifier, context);
  if (record !== '') appendFileSync(record, `${resolved.url}\n`);
  return resolved;
}
