/**
 * `node --import tsx scripts/bundle-dashboard.ts <dir>`: writes the dashboard's bundle (its
 * hashed script and stylesheet) into `dir`, which scripts/build.sh makes
 * `<build>/gateway/dashboard/bundle`, where the built gateway serves it from.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleDashboard } from '../gateway/dashboard/bundler.ts';

const dir = process.argv[2];
if (dir === undefined) {
  console.error('usage: node --import tsx scripts/bundle-dashboard.ts <dir>');
  process.exit(2);
}
mkdirSync(dir, { recursive: true });
for (const [name, asset] of await bundleDashboard()) writeFileSync(join(dir, name), asset.body);
