import type { Config } from '../../schemas/config.ts';
import { withKeystore } from './admin.ts';
import type { Parsed } from './main.ts';
import { UsageError } from './usage.ts';

/** `engine project create|update`. */
export async function projectCommand(config: Config, { positionals, values }: Parsed): Promise<number> {
  const [action, arg] = positionals;
  const flag = values['identity-verification'];
  if (action === 'create' && arg) {
    if (flag !== undefined && flag !== 'on') throw new UsageError('--identity-verification takes no value on create');
    const created = await withKeystore(config, (ks) => ks.createProject(arg, flag === 'on'));
    if (values['json']) console.log(JSON.stringify(created));
    else for (const [k, v] of Object.entries(created)) console.log(`${k}: ${v}`);
    return 0;
  }
  if (action === 'update' && arg) {
    if (flag !== 'on' && flag !== 'off') throw new UsageError('project update needs --identity-verification on|off');
    const found = await withKeystore(config, (ks) => ks.setIdentityVerification(arg, flag === 'on'));
    if (!found) {
      console.error(`engine: unknown project ${arg}`);
      return 1;
    }
    console.log(`identity verification ${flag} for project ${arg}`);
    return 0;
  }
  throw new UsageError('project needs: create <name> | update <project_id> --identity-verification on|off');
}
