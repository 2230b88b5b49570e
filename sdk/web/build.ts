/**
 * `node --import tsx sdk/web/build.ts [dir]`: writes the web SDK's files into `dir` (default
 * sdk/web/dist, the npm package's), prints each one's size minified and gzipped, and exits 1 when
 * the page script or the worker is over its budget.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { budgets, bundleWebSdk } from './bundle.ts';

const dir = process.argv[2] ?? fileURLToPath(new URL('./dist/', import.meta.url));
mkdirSync(dir, { recursive: true });
let over = false;
for (const [name, text] of await bundleWebSdk()) {
  writeFileSync(join(dir, name), text);
  const gz = gzipSync(text).length;
  const budget = budgets[name];
  over ||= budget !== undefined && gz > budget;
  const limit = budget === undefined ? '' : ` (budget ${(budget / 1024).toFixed(0)} KB${gz > budget ? ', OVER' : ''})`;
  console.log(`web SDK ${name}: ${(text.length / 1024).toFixed(1)} KB minified, ${(gz / 1024).toFixed(2)} KB gzipped${limit}`);
}
process.exitCode = over ? 1 : 0;
