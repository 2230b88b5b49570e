import { ALL_SEGMENT, type Segment } from '../../../schemas/segments.ts';
import type { FilterEntry } from '../../../schemas/filters.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { Keystore } from '../keys/keystore.ts';

/**
 * Segment definitions of each project (docs/api.md#segments), one Redis hash per project (name -> JSON
 * Segment): small, written by operators, read by the routes and the fan-out. `All` is never
 * stored: it is answered from the project's creation time and cannot be created or deleted.
 */
export class SegmentStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  /**
   * Stores a new segment and returns it; null when the name is taken (`All` always is). HSETNX
   * decides, so of two concurrent creates of one name exactly one succeeds.
   */
  async create(project: string, name: string, filters: readonly FilterEntry[], now = new Date()): Promise<Segment | null> {
    if (name === ALL_SEGMENT) return null;
    const segment: Segment = { name, filters: [...filters], created_at: now.toISOString() };
    const created = await this.redis.hsetnx(this.key(project), name, JSON.stringify(segment));
    return created === 1 ? segment : null;
  }

  /** The segment, or null when the project has none of that name. */
  async get(project: string, name: string): Promise<Segment | null> {
    if (name === ALL_SEGMENT) return this.all(project);
    const json = await this.redis.hget(this.key(project), name);
    return json === null ? null : parse(json);
  }

  /**
   * The stored segments of `names` by name, each read once, all in one HMGET; a name the project
   * has none of is absent. `All` is never stored: callers resolve it themselves and leave it out.
   */
  async getMany(project: string, names: readonly string[]): Promise<Map<string, Segment>> {
    const unique = [...new Set(names)].filter((name) => name !== ALL_SEGMENT);
    if (unique.length === 0) return new Map();
    const jsons = await this.redis.hmget(this.key(project), ...unique);
    const found = new Map<string, Segment>();
    unique.forEach((name, i) => {
      const json = jsons[i];
      if (typeof json === 'string') found.set(name, parse(json));
    });
    return found;
  }

  /** Every segment of the project, `All` included, sorted by name (code-unit order). */
  async list(project: string): Promise<Segment[]> {
    const [all, stored] = await Promise.all([this.all(project), this.redis.hvals(this.key(project))]);
    return [all, ...stored.map(parse)].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Deletes a stored segment and returns what was deleted; null when there was none (`All` is never
   * stored: callers refuse it first). One MULTI, so the body returned is the one removed, and of
   * two concurrent deletes only one gets it.
   */
  async delete(project: string, name: string): Promise<Segment | null> {
    const key = this.key(project);
    const replies = await this.redis.multi().hget(key, name).hdel(key, name).exec();
    if (replies === null) throw new Error('segment delete: transaction aborted');
    const [[getErr, json] = [], [delErr, removed] = []] = replies;
    if (getErr) throw getErr;
    if (delErr) throw delErr;
    return removed === 1 && typeof json === 'string' ? parse(json) : null;
  }

  private async all(project: string): Promise<Segment> {
    const stored = await new Keystore(this.redis, this.topology).getProject(project);
    return { name: ALL_SEGMENT, filters: [], created_at: stored?.created_at ?? '' };
  }

  /** A project's segments (hash: name to JSON); only this store names it. */
  private key(project: string): string {
    return this.topology.named(`project:${project}:segments`);
  }
}

/** Stored JSON was written by create() from checked filters. */
function parse(json: string): Segment {
  return JSON.parse(json) as Segment;
}
