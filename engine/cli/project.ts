import { withKeystore } from './admin.ts';
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
  run: async (config, { args, options }) => {
    const created = await withKeystore(config, (ks) => ks.createProject(args.name, options['identity-verification'] === true));
    if (options.json) console.log(JSON.stringify(created));
    else for (const [k, v] of Object.entries(created)) console.log(`${k}: ${v}`);
    return 0;
  },
});

/** `engine project update <project_id>`. */
export const projectUpdate = defineCommand({
  path: ['project', 'update'],
  args: [{ name: 'project_id' }],
  options: {
    'identity-verification': { kind: 'string', choices: ['on', 'off'], required: true, help: 'turn identity verification on or off' },
  },
  summary: "Changes a project's settings.",
  run: async (config, { args, options }) => {
    const flag = options['identity-verification'];
    const found = await withKeystore(config, (ks) => ks.setIdentityVerification(args.project_id, flag === 'on'));
    if (!found) {
      console.error(`engine: unknown project ${args.project_id}`);
      return 1;
    }
    console.log(`identity verification ${flag} for project ${args.project_id}`);
    return 0;
  },
});
