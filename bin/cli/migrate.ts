import { defineCommand } from './command.ts';

/** `engine migrate`. */
export const migrateCommand = defineCommand({
  path: ['migrate'],
  args: [],
  options: {},
  summary: 'Applies the pending ClickHouse migrations, then waits for the background rewrites they started.',
  run: async (config) => (await import('./actions/migrate.ts')).applyMigrations(config),
});
