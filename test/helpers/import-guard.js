// Loaded before a program with `node --import <this file>` (plain JavaScript: it also runs the
// build, where no TypeScript loader is present). It reads two variables:
// - IMPORT_GUARD_REFUSE, package names separated by commas: importing one of them throws;
// - IMPORT_GUARD_RECORD, a file: every module the process loads is appended to it, one file URL or
//   path a line (ES modules as they resolve, CommonJS ones from the require cache at exit).
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import process from 'node:process';

const refuse = (process.env.IMPORT_GUARD_REFUSE ?? '').split(',').filter(Boolean);
const record = process.env.IMPORT_GUARD_RECORD ?? '';

register('./import-guard-hooks.js', import.meta.url, { data: { refuse, record } });

if (record !== '') {
  const cache = createRequire(import.meta.url).cache;
  process.on('exit', () => appendFileSync(record, Object.keys(cache).map((path) => `${path}\n`).join('')));
}
