import { defineCommand } from './command.ts';

/** `engine sql "<query>" [--format <format>]`. */
export const sqlCommand = defineCommand({
  path: ['sql'],
  args: [{ name: 'query' }],
  options: {
    format: { kind: 'string', value: '<format>', help: 'any ClickHouse output format (default: PrettyCompact on a terminal, TSV otherwise)' },
  },
  summary: "Runs a read-only SQL query (docs/sql.md): through the running engine's SQL listener with SQL_KEY, else on the data itself.",
  run: async (config, { args, options }) =>
    (await import('./actions/sql.ts')).runSql(config, args.query, options.format ?? (process.stdout.isTTY ? 'PrettyCompact' : 'TSV')),
});
