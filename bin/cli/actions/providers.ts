import type { Config } from '../../../schemas/config.ts';
import type { ProviderName } from '../../../schemas/provider-names.ts';
import { InvalidCredentials, ProviderStore, checkCredentials } from '../../../engine/state/keys/provider-store.ts';
import { createRedis } from '../../../engine/infra/redis/client.ts';
import { Topology } from '../../../engine/infra/redis/topology.ts';
import { readJsonFile, withKeystore } from './admin.ts';

/** What `engine providers set` does: checks the credential file, then stores it for the project. */
export async function setProvider(config: Config, projectId: string, provider: ProviderName, file: string): Promise<number> {
  const parsed = await readJsonFile(file);
  if (parsed === undefined) return 1;
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
