import { defineCommand } from './command.ts';

/** `engine project create <name>`. */
export const projectCreate = defineCommand({
  path: ['project', 'create'],
  args: [{ name: 'name' }],
  options: {
    'identity-verification': { kind: 'flag', help: 'SDK-key calls that name a user must carry identity_hash (default: off)' },
    json: { kind: 'flag', help: 'print one JSON object instead of "field: value" lines' },
  },
  summary: 'Creates a project; prints project_id, sdk_key, rest_key and identity_secret (keys are shown once).',
  run: async (config, { args, options }) =>
    (await import('./actions/project.ts')).createProject(config, args.name, options['identity-verification'] === true, options.json === true),
});

/** `engine project update <project_id>`: one setting or more. */
export const projectUpdate = defineCommand({
  path: ['project', 'update'],
  args: [{ name: 'project_id' }],
  options: {
    'identity-verification': { kind: 'string', choices: ['on', 'off'], help: 'turn identity verification on or off' },
    'rate-limit': {
      kind: 'string',
      value: '<per-second>|off',
      help: 'calls a second each key of the project may make (a token bucket per key), or off (the default)',
    },
    burst: { kind: 'integer', value: '<n>', help: 'calls a key may make at once under --rate-limit (default: the rate, rounded up)' },
    timezone: { kind: 'string', value: '<zone>', help: 'time zone of users without a timezone tag, for local-time sends (default: UTC)' },
    'web-delivered-receipts': { kind: 'string', choices: ['on', 'off'], help: "the web SDK's worker reports each push it shows as delivered (default: off)" },
    'frequency-cap': {
      kind: 'string',
      value: '[<channel>:]<n>/<hours>h|[<channel>:]off',
      help: 'at most n sends to one user in any <hours> hours, for one channel (push, email, sms) or all; off removes it',
    },
  },
  summary: "Changes a project's settings; every gateway follows within KEY_CACHE_MS.",
  run: async (config, { args, options }) =>
    (await import('./actions/project.ts')).updateProject(config, args.project_id, {
      identity: options['identity-verification'],
      rate: options['rate-limit'],
      burst: options.burst,
      timezone: options.timezone,
      cap: options['frequency-cap'],
      delivered: options['web-delivered-receipts'],
    }),
});
