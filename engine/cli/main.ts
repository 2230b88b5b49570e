import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config.ts';
import type { RoleFactory, RoleName } from '../roles.ts';
import { keysCommand } from './keys.ts';
import { migrateCommand } from './migrate.ts';
import { projectCommand } from './project.ts';
import { providersCommand } from './providers.ts';
import { startCommand } from './start.ts';
import { UsageError } from './usage.ts';

const usage = `usage:
  engine start [--roles gateway,apply] [--port 8080]
  engine project create <name> [--identity-verification] [--json]
  engine project update <project_id> --identity-verification on|off
  engine keys create <project_id> --type sdk|rest [--json]
  engine keys list <project_id>
  engine keys revoke <key>
  engine providers set <project_id> <apns|fcm|webpush|twilio|sendgrid> --file <credentials.json>
  engine migrate`;

/**
 * The `engine` command line (API.md section 10). The roles come from the composition root
 * (bin/main.ts) because engine/ does not import the rooms that implement them.
 */
export async function runCli(argv: string[], roles: Partial<Record<RoleName, RoleFactory>>): Promise<number> {
  const [command, ...rest] = argv;
  try {
    const config = loadConfig();
    switch (command) {
      case 'start':
        return await startCommand(config, roles, parse(rest, { roles: { type: 'string' }, port: { type: 'string' } }));
      case 'project':
        return await projectCommand(
          config,
          parse(rest, { 'identity-verification': { type: 'string' }, json: { type: 'boolean' } }, ['identity-verification']),
        );
      case 'keys':
        return await keysCommand(config, parse(rest, { type: { type: 'string' }, json: { type: 'boolean' } }));
      case 'providers':
        return await providersCommand(config, parse(rest, { file: { type: 'string' } }));
      case 'migrate':
        return await migrateCommand(config, parse(rest, {}));
      case undefined:
      case 'help':
      case '--help':
        console.log(usage);
        return command === undefined ? 1 : 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      console.error(`engine: ${err.message}`);
      if (err instanceof UsageError) console.error(usage);
      return 2;
    }
    throw err;
  }
}

export interface Parsed {
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
}

type Options = Record<string, { type: 'string' | 'boolean' }>;

/** `--identity-verification` alone (project create) means on; flags in `bare` may come without a value. */
function parse(args: string[], options: Options, bare: string[] = []): Parsed {
  const normalised = args.flatMap((arg, i) => {
    const name = arg.slice(2);
    const next = args[i + 1];
    const bareFlag = arg.startsWith('--') && bare.includes(name) && (next === undefined || next.startsWith('--'));
    return bareFlag ? [arg, 'on'] : [arg];
  });
  try {
    const { positionals, values } = parseArgs({ args: normalised, options, allowPositionals: true, strict: true });
    return { positionals, values };
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}
