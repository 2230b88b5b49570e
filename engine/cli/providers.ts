import { readFile } from 'node:fs/promises';
import type { Config } from '../../schemas/config.ts';
import { ProviderNames, type ProviderName } from '../../schemas/providers.ts';
import { InvalidCredentials, ProviderStore, checkCredentials } from '../provider-store.ts';
import { createRedis } from '../redis.ts';
import { Topology } from '../topology.ts';
import { withKeystore } from './admin.ts';
import type { Parsed } from './main.ts';
import { UsageError } from './usage.ts';

/** `engine providers set <project_id> <provider> --file <credentials.json>`. */
export async function providersCommand(config: Config, { positionals, values }: Parsed): Promise<number> {
  const [action, projectId, provider] = positionals;
  const file = values['file'];
  if (action !== 'set' || !projectId || !provider || typeof file !== 'string') {
    throw new UsageError(`providers needs: set <project_id> <${ProviderNames.join('|')}> --file <credentials.json>`);
  }
  if (!(ProviderNames as string[]).includes(provider)) throw new UsageError(`unknown provider "${provider}" (${ProviderNames.join(', ')})`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    console.error(`engine: cannot read ${file} as JSON: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  let credentials;
  try {
    credentials = checkCredentials(provider as ProviderName, parsed);
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
    await new ProviderStore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)).set(projectId, provider as ProviderName, credentials);
  } finally {
    redis.disconnect();
  }
  const baseUrl = 'base_url' in credentials ? ` (base_url ${credentials.base_url})` : '';
  console.log(`${provider} credentials stored for project ${projectId}${baseUrl}`);
  return 0;
}
