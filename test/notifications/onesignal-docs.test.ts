import { readFileSync } from 'node:fs';
import t from 'tap';
import { OneSignalIgnored, OneSignalOptions, OneSignalTokens, OneSignalTranslated, OneSignalUnreachable } from '../../schemas/onesignal.ts';

/** docs/api.md's table of OneSignal fields names every field the request schema takes, once. */

const docs = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
const start = docs.indexOf('## Moving from OneSignal');
const section = docs.slice(start, docs.indexOf('\n## ', start + 1));
const rows = section.split('\n').filter((l) => l.startsWith('| `'));
const named = rows.flatMap((row) => [...(row.split(' | ')[0] ?? '').matchAll(/`([a-z_A-Z*]+)/g)].map((m) => m[1] ?? ''));

t.ok(rows.length > 10, 'the table is there');
for (const field of [...Object.keys(OneSignalTranslated), ...Object.keys(OneSignalOptions), ...Object.keys(OneSignalTokens), ...Object.keys(OneSignalUnreachable), ...Object.keys(OneSignalIgnored)]) {
  const wildcard = named.find((n) => n.endsWith('*') && field.startsWith(n.slice(0, -1)));
  t.ok(named.includes(field) || wildcard !== undefined, `${field} is in the table`);
}
const listed = named.filter((n) => !n.endsWith('*'));
t.same(
  listed.filter((n, i) => listed.indexOf(n) !== i),
  [],
  'no field is in two rows',
);
