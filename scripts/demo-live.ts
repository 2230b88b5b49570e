/**
 * `node --import tsx scripts/demo-live.ts <demo-project.json>`: exits 0 when the project saved by
 * scripts/run.sh still exists in Redis with both its keys live, 1 otherwise (scripts/run.sh then
 * creates a new one).
 */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Keystore, type CreatedProject } from '../engine/state/keys/keystore.ts';
import { createRedis } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';

async function live(file: string): Promise<boolean> {
  let saved: CreatedProject;
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as CreatedProject;
  } catch {
    return false;
  }
  const config = loadConfig();
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  try {
    const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
    const [project, sdk, rest] = await Promise.all([
      keystore.getProject(saved.project_id),
      keystore.lookupKey(saved.sdk_key),
      keystore.lookupKey(saved.rest_key),
    ]);
    return project !== null && sdk?.project_id === saved.project_id && rest?.project_id === saved.project_id;
  } finally {
    redis.disconnect();
  }
}

process.exit((await live(process.argv[2] ?? '')) ? 0 : 1);
