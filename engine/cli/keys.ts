import { withKeystore } from './admin.ts';
import { defineCommand } from './command.ts';

/** `engine keys create <project_id> --type sdk|rest`. */
export const keysCreate = defineCommand({
  path: ['keys', 'create'],
  args: [{ name: 'project_id' }],
  options: {
    type: { kind: 'string', choices: ['sdk', 'rest'], required: true, help: 'sdk: the SDK surface; rest: the REST API' },
    json: { kind: 'flag', help: 'print {"key": …} instead of the bare key' },
  },
  summary: 'Issues another key for a project; it is shown once.',
  run: async (config, { args, options }) => {
    const project = await withKeystore(config, (ks) => ks.getProject(args.project_id));
    if (!project) return unknownProject(args.project_id);
    const key = await withKeystore(config, (ks) => ks.createKey(args.project_id, options.type));
    console.log(options.json ? JSON.stringify({ key }) : key);
    return 0;
  },
});

/** `engine keys list <project_id>`. */
export const keysList = defineCommand({
  path: ['keys', 'list'],
  args: [{ name: 'project_id' }],
  options: {},
  summary: "Lists a project's keys: id, type, first characters, creation and revocation time, never the key.",
  run: async (config, { args }) => {
    const id = args.project_id;
    const result = await withKeystore(config, async (ks) => ((await ks.getProject(id)) ? ks.listKeys(id) : null));
    if (!result) return unknownProject(id);
    for (const k of result) {
      console.log(`${k.id}  ${k.type.padEnd(4)}  ${k.prefix}…  created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`);
    }
    return 0;
  },
});

/** `engine keys revoke <key>`. */
export const keysRevoke = defineCommand({
  path: ['keys', 'revoke'],
  args: [{ name: 'key' }],
  options: {},
  summary: 'Revokes a key (the key itself); every gateway refuses it within KEY_CACHE_MS.',
  run: async (config, { args }) => {
    if (!(await withKeystore(config, (ks) => ks.revokeKey(args.key)))) {
      console.error('engine: no such key');
      return 1;
    }
    console.log('revoked');
    return 0;
  },
});

function unknownProject(id: string): number {
  console.error(`engine: unknown project ${id}`);
  return 1;
}
