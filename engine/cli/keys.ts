import type { Config } from '../../schemas/config.ts';
import { withKeystore } from './admin.ts';
import type { Parsed } from './main.ts';
import { UsageError } from './usage.ts';

/** `engine keys create|list|revoke`. */
export async function keysCommand(config: Config, { positionals, values }: Parsed): Promise<number> {
  const [action, arg] = positionals;
  if (action === 'create' && arg) {
    const type = values['type'];
    if (type !== 'sdk' && type !== 'rest') throw new UsageError('keys create needs --type sdk|rest');
    const project = await withKeystore(config, (ks) => ks.getProject(arg));
    if (!project) return unknownProject(arg);
    const key = await withKeystore(config, (ks) => ks.createKey(arg, type));
    console.log(values['json'] ? JSON.stringify({ key }) : key);
    return 0;
  }
  if (action === 'list' && arg) {
    const result = await withKeystore(config, async (ks) => ((await ks.getProject(arg)) ? ks.listKeys(arg) : null));
    if (!result) return unknownProject(arg);
    for (const k of result) {
      console.log(`${k.id}  ${k.type.padEnd(4)}  ${k.prefix}…  created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`);
    }
    return 0;
  }
  if (action === 'revoke' && arg) {
    if (!(await withKeystore(config, (ks) => ks.revokeKey(arg)))) {
      console.error('engine: no such key');
      return 1;
    }
    console.log('revoked');
    return 0;
  }
  throw new UsageError('keys needs: create <project_id> --type sdk|rest | list <project_id> | revoke <key>');
}

function unknownProject(id: string): number {
  console.error(`engine: unknown project ${id}`);
  return 1;
}
