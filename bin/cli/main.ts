import type { Config } from '../../schemas/config.ts';
import type { RoleFactory, RoleName } from '../../engine/infra/runner/roles.ts';
import type { Command } from './command.ts';
import { commandTable } from './commands.ts';
import { parseCommandLine } from './parse.ts';
import { UsageError, help, usage } from './usage.ts';

/**
 * The `engine` command line (docs/configuration.md#the-engine-command). The roles come from the
 * composition root (bin/main.ts) because engine/ does not import the rooms that implement them.
 * The command line is checked before the configuration is read, so help needs no environment,
 * and help and usage errors load nothing else: the configuration's schema loads once a command
 * is chosen, and what the command does when it runs (./actions/).
 */
export async function runCli(argv: string[], roles: Partial<Record<RoleName, RoleFactory>>): Promise<number> {
  const table = commandTable(roles);
  let invoked: Command | undefined;
  try {
    const invocation = parseCommandLine(table, argv);
    if (invocation.kind === 'help') {
      console.log(help(invocation.commands));
      return 0;
    }
    invoked = invocation.command;
    const config = await readConfig();
    return config ? await invoked.run(config, { args: invocation.args, options: invocation.options }) : 2;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`engine: ${err.message}`);
      const concerned = err.commands.length > 0 ? err.commands : invoked ? [invoked] : table;
      console.error(usage(concerned));
      if (concerned.length < table.length) console.error('(`engine help` lists every command with its options)');
      return 2;
    }
    throw err;
  }
}

/** The configuration from the environment, or null once a bad value is reported. */
async function readConfig(): Promise<Config | null> {
  const { ConfigError, loadConfig } = await import('../../engine/infra/process/config.ts');
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`engine: ${err.message}`);
    return null;
  }
}
