import type { Config } from '../../../schemas/config.ts';
import type { ErrorItem } from '../../../schemas/errors.ts';
import { WebhookBody } from '../../../schemas/webhooks.ts';
import { capped, violations } from '../../../engine/infra/validation/ajv-errors.ts';
import { outboundPolicy, refusedUrl } from '../../../engine/infra/outbound/guard.ts';
import { createRedis } from '../../../engine/infra/redis/client.ts';
import { Topology } from '../../../engine/infra/redis/topology.ts';
import { compileTwoWay } from '../../../engine/infra/validation/validator.ts';
import { WebhookRegistry } from '../../../engine/state/webhooks/registry.ts';
import { withKeystore } from './admin.ts';

/** What `engine webhooks create` does: the options checked as POST /api/webhooks checks a body. */
export async function createWebhook(config: Config, projectId: string, given: { url: string; events: string; secret: string | undefined }): Promise<number> {
  const body = {
    url: given.url,
    events: given.events
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean),
    ...(given.secret === undefined ? {} : { secret: given.secret }),
  };
  const errors: ErrorItem[] = capped(violations(compileTwoWay(WebhookBody), body, ''), '');
  const why = errors.length === 0 ? refusedUrl(outboundPolicy(config), 'webhook', body.url) : undefined;
  if (why !== undefined) errors.push({ code: 'validation_failed', message: `url: ${why}`, path: '/url' });
  if (errors.length > 0) {
    console.error(`engine: not a valid webhook:\n  ${errors.map((e) => e.message).join('\n  ')}`);
    return 1;
  }
  const created = await withRegistry(config, projectId, (registry) => registry.create(projectId, body as WebhookBody));
  if (created === null) return unknownProject(projectId);
  console.log(JSON.stringify(created));
  return 0;
}

/** What `engine webhooks list` does: `{"webhooks": [...]}`, as the route answers. */
export async function listWebhooks(config: Config, projectId: string): Promise<number> {
  const webhooks = await withRegistry(config, projectId, (registry) => registry.list(projectId));
  if (webhooks === null) return unknownProject(projectId);
  console.log(JSON.stringify({ webhooks }));
  return 0;
}

/** What `engine webhooks get` does. */
export async function getWebhook(config: Config, projectId: string, webhookId: string): Promise<number> {
  return printOne(projectId, webhookId, await withRegistry(config, projectId, (registry) => registry.get(projectId, webhookId)));
}

/** What `engine webhooks delete` does: prints the deleted endpoint. */
export async function deleteWebhook(config: Config, projectId: string, webhookId: string): Promise<number> {
  return printOne(projectId, webhookId, await withRegistry(config, projectId, (registry) => registry.delete(projectId, webhookId)));
}

function printOne(projectId: string, webhookId: string, found: unknown): number {
  if (found === null) {
    console.error(`engine: no webhook ${webhookId} in project ${projectId}`);
    return 1;
  }
  console.log(JSON.stringify(found));
  return 0;
}

/** Runs `action` on the webhook registry; null when the project does not exist. */
async function withRegistry<T>(config: Config, projectId: string, action: (registry: WebhookRegistry) => Promise<T>): Promise<T | null> {
  if (!(await withKeystore(config, (ks) => ks.getProject(projectId)))) return null;
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  try {
    return await action(new WebhookRegistry(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)));
  } finally {
    redis.disconnect();
  }
}

function unknownProject(id: string): number {
  console.error(`engine: unknown project ${id}`);
  return 1;
}
