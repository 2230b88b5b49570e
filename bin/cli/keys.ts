import { defineCommand } from './command.ts';
import { UsageError } from './usage.ts';

/** `engine keys create [<project_id>] --type sdk|rest|operator`. */
export const keysCreate = defineCommand({
  path: ['keys', 'create'],
  args: [{ name: 'project_id', optional: true }],
  options: {
    type: {
      kind: 'string',
      choices: ['sdk', 'rest', 'operator'],
      required: true,
      help: 'sdk: the SDK surface; rest: the REST API; operator: the SQL listener (no project)',
    },
    json: { kind: 'flag', help: 'print {"key": …} instead of the bare key' },
  },
  summary: 'Issues another key for a project, or an operator key; it is shown once.',
  run: async (config, { args, options }) => {
    const actions = await import('./actions/keys.ts');
    const json = options.json === true;
    if (options.type === 'operator') {
      if (args.project_id !== undefined) throw new UsageError('keys create: an operator key belongs to no project', [keysCreate]);
      return actions.createOperatorKey(config, json);
    }
    if (args.project_id === undefined) throw new UsageError(`keys create: a ${options.type} key needs <project_id>`, [keysCreate]);
    return actions.createKey(config, args.project_id, options.type, json);
  },
});

/** `engine keys list [<project_id>]`. */
export const keysList = defineCommand({
  path: ['keys', 'list'],
  args: [{ name: 'project_id', optional: true }],
  options: {},
  summary: "Lists a project's keys, or without a project the operator keys: id, type, first characters, creation and revocation time, never the key.",
  run: async (config, { args }) => (await import('./actions/keys.ts')).listKeys(config, args.project_id),
});

/** `engine keys revoke <key>`. */
export const keysRevoke = defineCommand({
  path: ['keys', 'revoke'],
  args: [{ name: 'key' }],
  options: {},
  summary: 'Revokes a key (the key itself); every gateway and SQL listener refuses it within KEY_CACHE_MS.',
  run: async (config, { args }) => (await import('./actions/keys.ts')).revokeKey(config, args.key),
});
