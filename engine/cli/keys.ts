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
  run: async (config, { args, options }) => (await import('./actions/keys.ts')).createKey(config, args.project_id, options.type, options.json === true),
});

/** `engine keys list <project_id>`. */
export const keysList = defineCommand({
  path: ['keys', 'list'],
  args: [{ name: 'project_id' }],
  options: {},
  summary: "Lists a project's keys: id, type, first characters, creation and revocation time, never the key.",
  run: async (config, { args }) => (await import('./actions/keys.ts')).listKeys(config, args.project_id),
});

/** `engine keys revoke <key>`. */
export const keysRevoke = defineCommand({
  path: ['keys', 'revoke'],
  args: [{ name: 'key' }],
  options: {},
  summary: 'Revokes a key (the key itself); every gateway refuses it within KEY_CACHE_MS.',
  run: async (config, { args }) => (await import('./actions/keys.ts')).revokeKey(config, args.key),
});
