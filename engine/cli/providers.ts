import { readFile } from 'node:fs/promises';
import type { Config } from '../../schemas/config.ts';
import { ProviderNames, type ProviderName } from '../../schemas/providers.ts';
import { InvalidCredentials, ProviderStore, checkCredentials } from '../provider-store.ts';
import { createRedis } from '../redis.ts';
import { Topology } from '../topology.ts';
import { withKeystore } from './admin.ts';
import { defineCommand } from './command.ts';

/** `engine providers set <project_id> <provider> --file <credentials.json>`. */
export const providersSet = defineCommand({
  path: ['providers', 'set'],
  args: [{ name: 'project_id' }, { name: 'provider', choices: ProviderNames }],
  options: {
    file: { kind: 'string', value: '<credentials.json>', required: true, help: "the provider's credentials, one JSON object (docs/providers.md#credential-files)" },
  },
  summary: "Checks and stores a provider's credentials and base URL for a project.",
  run: (config, { args, options }) => setProvider(config, args.project_id, args.provider, options.file),
});

async function setProvider(config: Config, projectId: string, provider: ProviderName, file: string): Promise<number> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    console.error(`engine: cannot read ${file} as JSON: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  let credentials;
  try {
    credentials = checkCredentials(provider, parsed);
  } catch (err) {
    if (!(err instanceof InvalidCredentials)) throw err;
    console.error(`engine: ${file} is not a valid ${provider} credential file:\n  ${err.problems.join('\n  ')}`);
    return 1;
  }
  if (!(await withKeystore(config, (ks) => ks.getProject(projectId)))) {
    console.error(`engine: unknown project ${projectId}`);
    return 1;
  }
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  try {
    await new ProviderStore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)).set(projectId, provider, credentials);
  } finally {
    redis.disconnect();
  }
  const baseUrl = 'base_url' in credentials ? ` (base_url ${credentials.base_url})` : '';
  console.log(`${provider} credentials stored for project ${projectId}${baseUrl}`);
  return 0;
}
