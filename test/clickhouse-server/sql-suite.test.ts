import { runInServerMode } from './server-mode.ts';

await runInServerMode('test/sql');
