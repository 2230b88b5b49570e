#!/usr/bin/env node
// The `engine` command: the JavaScript build in dist/ (`npm run build`; `npm install` and
// `make run` build it), or the TypeScript sources through tsx's loader when there is no build or
// ENGINE_FROM_SOURCE=1 (tests and development, where the build may be older than the sources).
// tsx is a development package: an install without them runs the build only.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const built = new URL('../dist/bin/main.js', import.meta.url);
if (process.env.ENGINE_FROM_SOURCE !== '1' && existsSync(built)) {
  await import(built.href);
} else {
  const tsx = await import('tsx/esm/api').catch((err) => {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    process.stderr.write('engine: running the sources needs tsx, a development package; run the build instead (`npm run build`, without ENGINE_FROM_SOURCE=1)\n');
    process.exit(1);
  });
  tsx.register();
  await import('./main.ts');
}
