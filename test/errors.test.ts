import { readFileSync } from 'node:fs';
import t from 'tap';
import { ErrorCodes } from '../schemas/errors.ts';
import { openApiDocument } from '../gateway/server/openapi.ts';
import { routes } from '../gateway/routes/table.ts';

const apiMd = readFileSync(new URL('../../shared/API.md', import.meta.url), 'utf8');

t.test('every registered error code is documented in API.md with its status, and the reverse', async (t) => {
  const table = apiMd.split('\n').filter((line) => /^\| \d{3} \|/.test(line));
  const documented = new Map<string, number>();
  for (const row of table) {
    const [, statusCell = '', codesCell = ''] = row.split('|');
    for (const [, code] of codesCell.matchAll(/`([a-z_]+)`/g)) if (code) documented.set(code, Number(statusCell.trim()));
  }
  for (const [code, def] of Object.entries(ErrorCodes)) {
    t.equal(documented.get(code), def.status, `${code} is in API.md section 2 with status ${def.status}`);
    t.ok(def.hint.length > 0, `${code} has an operator hint`);
  }
  for (const code of documented.keys()) t.ok(code in ErrorCodes, `API.md code ${code} is registered`);
});

t.test('the OpenAPI document lists every error code', async (t) => {
  const doc = JSON.stringify(openApiDocument(routes, 'test'));
  for (const code of Object.keys(ErrorCodes)) t.ok(doc.includes(`"${code}"`), `${code} is in the OpenAPI document`);
});
