import type { Config } from '../../../schemas/config.ts';
import { TemplateBody } from '../../../schemas/templates.ts';
import { capped, violations } from '../../../engine/infra/validation/ajv-errors.ts';
import { personalErrors } from '../../../engine/state/notifications/body.ts';
import { createRedis } from '../../../engine/infra/redis/client.ts';
import { TemplateStore } from '../../../engine/state/templates/store.ts';
import { Topology } from '../../../engine/infra/redis/topology.ts';
import { compileTwoWay } from '../../../engine/infra/validation/validator.ts';
import { readJsonFile, withKeystore } from './admin.ts';

/** What `engine templates create` does: the file checked as POST /api/templates checks a body. */
export async function createTemplate(config: Config, projectId: string, file: string): Promise<number> {
  const parsed = await readJsonFile(file);
  if (parsed === undefined) return 1;
  const errors = capped(violations(compileTwoWay(TemplateBody), parsed, ''), '');
  if (errors.length === 0) errors.push(...personalErrors(parsed as TemplateBody));
  if (errors.length > 0) {
    console.error(`engine: ${file} is not a valid template:\n  ${errors.map((e) => e.message).join('\n  ')}`);
    return 1;
  }
  const created = await withTemplates(config, projectId, (store) => store.create(projectId, parsed as TemplateBody));
  if (created === null) return unknownProject(projectId);
  console.log(created.id);
  return 0;
}

/** What `engine templates list` does: one line a template. */
export async function listTemplates(config: Config, projectId: string): Promise<number> {
  const templates = await withTemplates(config, projectId, (store) => store.list(projectId));
  if (templates === null) return unknownProject(projectId);
  for (const t of templates) console.log(`${t.id}  ${t.channel.padEnd(5)}  ${t.name}`);
  return 0;
}

/** What `engine templates delete` does. */
export async function deleteTemplate(config: Config, projectId: string, templateId: string): Promise<number> {
  const deleted = await withTemplates(config, projectId, (store) => store.delete(projectId, templateId));
  if (deleted === null) {
    console.error(`engine: no template ${templateId} in project ${projectId}`);
    return 1;
  }
  console.log(`deleted ${deleted.id}`);
  return 0;
}

/** Runs `action` on the project's templates; null when the project does not exist. */
async function withTemplates<T>(config: Config, projectId: string, action: (store: TemplateStore) => Promise<T>): Promise<T | null> {
  if (!(await withKeystore(config, (ks) => ks.getProject(projectId)))) return null;
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  try {
    return await action(new TemplateStore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)));
  } finally {
    redis.disconnect();
  }
}

function unknownProject(id: string): number {
  console.error(`engine: unknown project ${id}`);
  return 1;
}
