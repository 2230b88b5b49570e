import { readFileSync } from 'node:fs';
import t from 'tap';
import { ErrorCodes } from '../schemas/errors.ts';
import { openApiDocument } from '../gateway/server/openapi.ts';
import { routes } from '../gateway/routes/table.ts';

const apiMd = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');

/** The status of each code in the table of docs/api.md#errors; a code listed twice keeps every status. */
function documentedCodes(): Map<string, number[]> {
  const start = apiMd.indexOf('\n## Errors\n');
  const end = apiMd.indexOf('\n## ', start + 1);
  const section = apiMd.slice(start, end);
  const documented = new Map<string, number[]>();
  for (const row of section.split('\n').filter((line) => /^\| \d{3} \|/.test(line))) {
    const [, statusCell = '', codesCell = ''] = row.split('|');
    for (const [, code] of codesCell.matchAll(/`([a-z_]+)`/g)) {
      if (code) documented.set(code, [...(documented.get(code) ?? []), Number(statusCell.trim())]);
    }
  }
  return documented;
}

t.test('docs/api.md has an error table to check against', async (t) => {
  t.ok(apiMd.includes('\n## Errors\n'), 'the Errors section exists');
  t.ok(documentedCodes().size >= 10, 'its table lists the codes');
});

t.test('every registered error code is in the table of docs/api.md with its status, and the reverse', async (t) => {
  const documented = documentedCodes();
  for (const [code, def] of Object.entries(ErrorCodes)) {
    t.same(documented.get(code), [def.status], `${code} is documented once, with status ${def.status}`);
    t.ok(def.message.length > 0 && def.hint.length > 0, `${code} has a message and an operator hint`);
  }
  for (const code of documented.keys()) t.ok(Object.hasOwn(ErrorCodes, code), `documented code ${code} is registered`);
});

t.test('the OpenAPI document lists every error code', async (t) => {
  const doc = JSON.stringify(openApiDocument(routes, 'test'));
  for (const code of Object.keys(ErrorCodes)) t.ok(doc.includes(`"${code}"`), `${code} is in the OpenAPI document`);
});
