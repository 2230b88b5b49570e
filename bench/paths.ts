import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root folder, with a trailing separator. */
export const root = fileURLToPath(new URL('..', import.meta.url));

/** Where each run leaves its report (bench/report.ts). */
export const reportsDir = join(root, 'bench/reports');
