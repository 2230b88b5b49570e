import { randomUUID } from 'node:crypto';
import type { Template, TemplateBody } from '../../../schemas/templates.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';

/**
 * Notification templates of each project (docs/api.md#templates): one Redis hash per project
 * (id -> JSON Template), written by the REST routes and `engine templates`, read when a
 * notification names one by `template_id`.
 */
export class TemplateStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  async create(project: string, body: TemplateBody, now = new Date()): Promise<Template> {
    const template: Template = {
      id: randomUUID(),
      name: body.name,
      headings: body.headings ?? null,
      contents: body.contents,
      channel: body.channel ?? 'PUSH',
      created_at: now.toISOString(),
    };
    await this.redis.hset(this.key(project), template.id, JSON.stringify(template));
    return template;
  }

  /** The template, or null when the project has none of that id. */
  async get(project: string, id: string): Promise<Template | null> {
    const json = await this.redis.hget(this.key(project), id);
    return json === null ? null : (JSON.parse(json) as Template);
  }

  /** Every template of the project, oldest first. */
  async list(project: string): Promise<Template[]> {
    const stored = await this.redis.hvals(this.key(project));
    return stored.map((json) => JSON.parse(json) as Template).sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  }

  /** Deletes a template and returns it; null when there was none. One MULTI: of two deletes one gets it. */
  async delete(project: string, id: string): Promise<Template | null> {
    const key = this.key(project);
    const replies = await this.redis.multi().hget(key, id).hdel(key, id).exec();
    if (replies === null) throw new Error('template delete: transaction aborted');
    const [[getErr, json] = [], [delErr, removed] = []] = replies;
    if (getErr) throw getErr;
    if (delErr) throw delErr;
    return removed === 1 && typeof json === 'string' ? (JSON.parse(json) as Template) : null;
  }

  /** A project's templates (hash: id to JSON); only this store names it. */
  private key(project: string): string {
    return this.topology.named(`project:${project}:templates`);
  }
}
