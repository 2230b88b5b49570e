import type { Config } from '../../../schemas/config.ts';
import type { KeyType } from '../../../engine/state/keys/keystore.ts';
import { withKeystore } from './admin.ts';

/** What `engine keys create` does: prints the new key (or `{"key": …}`). */
export async function createKey(config: Config, projectId: string, type: KeyType, json: boolean): Promise<number> {
  const project = await withKeystore(config, (ks) => ks.getProject(projectId));
  if (!project) return unknownProject(projectId);
  const key = await withKeystore(config, (ks) => ks.createKey(projectId, type));
  console.log(json ? JSON.stringify({ key }) : key);
  return 0;
}

/** What `engine keys create --type operator` does: prints the new key (or `{"key": …}`). */
export async function createOperatorKey(config: Config, json: boolean): Promise<number> {
  const key = await withKeystore(config, (ks) => ks.createOperatorKey());
  console.log(json ? JSON.stringify({ key }) : key);
  return 0;
}

/** What `engine keys list` does: one line a key, never the key itself; the operator keys without a project. */
export async function listKeys(config: Config, projectId: string | undefined): Promise<number> {
  const result = await withKeystore(config, async (ks) => {
    if (projectId === undefined) return ks.listOperatorKeys();
    return (await ks.getProject(projectId)) ? ks.listKeys(projectId) : null;
  });
  if (!result) return unknownProject(projectId ?? '');
  for (const k of result) {
    console.log(`${k.id}  ${k.type.padEnd(8)}  ${k.prefix}…  created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`);
  }
  return 0;
}

/** What `engine keys revoke` does. */
export async function revokeKey(config: Config, key: string): Promise<number> {
  if (!(await withKeystore(config, (ks) => ks.revokeKey(key)))) {
    console.error('engine: no such key');
    return 1;
  }
  console.log('revoked');
  return 0;
}

function unknownProject(id: string): number {
  console.error(`engine: unknown project ${id}`);
  return 1;
}
