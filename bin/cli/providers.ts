import { ProviderNames } from '../../schemas/provider-names.ts';
import { defineCommand } from './command.ts';

/** `engine providers set <project_id> <provider> --file <credentials.json>`. */
export const providersSet = defineCommand({
  path: ['providers', 'set'],
  args: [{ name: 'project_id' }, { name: 'provider', choices: ProviderNames }],
  options: {
    file: { kind: 'string', value: '<credentials.json>', required: true, help: "the provider's credentials, one JSON object (docs/providers.md#credential-files)" },
  },
  summary: "Checks and stores a provider's credentials and base URL for a project.",
  run: async (config, { args, options }) => (await import('./actions/providers.ts')).setProvider(config, args.project_id, args.provider, options.file),
});
