import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { FrequencyCap } from '../../../schemas/notifications.ts';
import type { Channel } from '../../../schemas/outcomes.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { ProjectKeys } from './redis-keys.ts';

/** Projects and their keys (docs/api.md#keys-and-projects). Only the SHA-256 of a key is stored. */

/** Project keys: the SDK surface and the REST API. */
export type KeyType = 'sdk' | 'rest';

/** Every kind of key: operator keys belong to no project and open only the SQL listener (docs/sql.md). */
export type AnyKeyType = KeyType | 'operator';

/**
 * A project's per-key token bucket (docs/api.md#rate-limits-429-and-retry-after): each key may make `burst` calls at once,
 * refilled at `per_second` calls a second.
 */
export interface RateLimit {
  per_second: number;
  burst: number;
}

/** What a stored rate limit may be; a slip such as a rate of 1e-9 (one call in 30 years) is refused. */
export const RateLimitBounds = { per_second: { min: 0.001, max: 1_000_000 }, burst: { min: 1, max: 1_000_000 } } as const;

export interface Project {
  id: string;
  name: string;
  identity_verification: boolean;
  identity_secret: string;
  /** null: no rate limit (the default). */
  rate_limit: RateLimit | null;
  /** Local-time sends use it for users without a `timezone` tag (docs/api.md#local-time). */
  timezone: string;
  /** Per channel, at most so many sends to one user in a rolling window (docs/api.md#frequency-caps). */
  frequency_caps: FrequencyCaps;
  /** The web SDK's worker sends a `delivered` receipt for each push it shows (sdk/web/README.md). */
  web_delivered_receipts: boolean;
  created_at: string;
}

export type FrequencyCaps = Partial<Record<Channel, FrequencyCap>>;

/** Project hash field of a channel's frequency cap, `<max>/<hours>`. */
const capField = (channel: Channel): string => `frequency_cap_${channel}`;

function capsOf(h: Record<string, string>): FrequencyCaps {
  const caps: FrequencyCaps = {};
  for (const channel of ['PUSH', 'EMAIL', 'SMS'] as const) {
    const [max, hours] = (h[capField(channel)] ?? '').split('/').map(Number);
    if (max !== undefined && hours !== undefined && max > 0 && hours > 0) caps[channel] = { max, hours };
  }
  return caps;
}

export interface CreatedProject {
  project_id: string;
  sdk_key: string;
  rest_key: string;
  identity_secret: string;
}

export interface KeyRecord {
  /** The key's public id: the first 12 hex digits of its hash, shown by `keys list`. */
  id: string;
  type: AnyKeyType;
  /** The key's first characters, so an operator can tell keys apart. */
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface KeyOwner {
  project_id: string;
  type: KeyType;
}

/** The stored limit, or null when there is none (or it is not a usable one). */
function rateLimitOf(perSecond: string | undefined, burst: string | undefined): RateLimit | null {
  const limit = { per_second: Number(perSecond), burst: Number(burst) };
  return limit.per_second > 0 && limit.burst >= 1 ? limit : null;
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

function newKey(type: AnyKeyType): string {
  return `${type}_${randomBytes(24).toString('base64url')}`;
}

export class Keystore {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  /** A new project with its SDK and REST keys; `id` puts back a project whose records outlived its Redis keys (the dashboard bench). */
  async createProject(name: string, identityVerification: boolean, id: string = randomUUID()): Promise<CreatedProject> {
    const secret = randomBytes(32).toString('hex');
    await this.redis.hset(this.topology.own(ProjectKeys).project(id), {
      name,
      identity_verification: identityVerification ? '1' : '0',
      identity_secret: secret,
      created_at: new Date().toISOString(),
    });
    await this.redis.sadd(this.topology.own(ProjectKeys).projects(), id);
    const sdk = await this.createKey(id, 'sdk');
    const rest = await this.createKey(id, 'rest');
    return { project_id: id, sdk_key: sdk, rest_key: rest, identity_secret: secret };
  }

  async getProject(id: string): Promise<Project | null> {
    const h = await this.redis.hgetall(this.topology.own(ProjectKeys).project(id));
    if (!h['name']) return null;
    return {
      id,
      name: h['name'],
      identity_verification: h['identity_verification'] === '1',
      identity_secret: h['identity_secret'] ?? '',
      rate_limit: rateLimitOf(h['rate_per_second'], h['rate_burst']),
      timezone: h['timezone'] ?? 'UTC',
      frequency_caps: capsOf(h),
      web_delivered_receipts: h['web_delivered_receipts'] === '1',
      created_at: h['created_at'] ?? '',
    };
  }

  /** Turns identity verification on or off; false when the project does not exist. */
  async setIdentityVerification(id: string, on: boolean): Promise<boolean> {
    if (!(await this.getProject(id))) return false;
    await this.redis.hset(this.topology.own(ProjectKeys).project(id), 'identity_verification', on ? '1' : '0');
    return true;
  }

  /** Turns the web SDK's `delivered` receipts on or off; false when the project does not exist. */
  async setWebDeliveredReceipts(id: string, on: boolean): Promise<boolean> {
    if (!(await this.getProject(id))) return false;
    await this.redis.hset(this.topology.own(ProjectKeys).project(id), 'web_delivered_receipts', on ? '1' : '0');
    return true;
  }

  /**
   * Sets the project's rate limit, or removes it (null); false when the project does not exist.
   * Gateways see the change within KEY_CACHE_MS (it comes with their cached key lookups).
   */
  async setRateLimit(id: string, limit: RateLimit | null): Promise<boolean> {
    if (!(await this.getProject(id))) return false;
    const key = this.topology.own(ProjectKeys).project(id);
    if (limit === null) await this.redis.hdel(key, 'rate_per_second', 'rate_burst');
    else await this.redis.hset(key, { rate_per_second: String(limit.per_second), rate_burst: String(limit.burst) });
    return true;
  }

  /** Sets the project's default time zone (checked by the caller); false when the project does not exist. */
  async setTimeZone(id: string, zone: string): Promise<boolean> {
    if (!(await this.getProject(id))) return false;
    await this.redis.hset(this.topology.own(ProjectKeys).project(id), 'timezone', zone);
    return true;
  }

  /** Sets or removes (null) the frequency cap of each given channel; false when the project does not exist. */
  async setFrequencyCap(id: string, channels: readonly Channel[], cap: FrequencyCap | null): Promise<boolean> {
    if (!(await this.getProject(id))) return false;
    const key = this.topology.own(ProjectKeys).project(id);
    if (cap === null) await this.redis.hdel(key, ...channels.map(capField));
    else await this.redis.hset(key, Object.fromEntries(channels.map((c) => [capField(c), `${cap.max}/${cap.hours}`])));
    return true;
  }

  /** Issues a key for an existing project and returns it; the key itself is never stored. */
  async createKey(projectId: string, type: KeyType): Promise<string> {
    if (!(await this.redis.exists(this.topology.own(ProjectKeys).project(projectId)))) throw new Error(`unknown project ${projectId}`);
    const key = newKey(type);
    const hash = hashKey(key);
    await this.redis.hset(this.topology.own(ProjectKeys).key(hash), {
      project_id: projectId,
      type,
      prefix: key.slice(0, 8),
      created_at: new Date().toISOString(),
    });
    await this.redis.sadd(this.topology.own(ProjectKeys).projectKeys(projectId), hash);
    return key;
  }

  /** Issues an operator key (no project) and returns it; the key itself is never stored. */
  async createOperatorKey(): Promise<string> {
    const key = newKey('operator');
    const hash = hashKey(key);
    // Past `operator_`, as a project key's prefix shows four characters past `sdk_`.
    await this.redis.hset(this.topology.own(ProjectKeys).key(hash), { type: 'operator', prefix: key.slice(0, 'operator_'.length + 4), created_at: new Date().toISOString() });
    await this.redis.sadd(this.topology.own(ProjectKeys).operatorKeys(), hash);
    return key;
  }

  async listKeys(projectId: string): Promise<KeyRecord[]> {
    return this.records(await this.redis.smembers(this.topology.own(ProjectKeys).projectKeys(projectId)));
  }

  async listOperatorKeys(): Promise<KeyRecord[]> {
    return this.records(await this.redis.smembers(this.topology.own(ProjectKeys).operatorKeys()));
  }

  /** The SHA-256 hashes (hex) of the operator keys not revoked. */
  async liveOperatorKeyHashes(): Promise<string[]> {
    const hashes = await this.redis.smembers(this.topology.own(ProjectKeys).operatorKeys());
    const revoked = await Promise.all(hashes.map((hash) => this.redis.hget(this.topology.own(ProjectKeys).key(hash), 'revoked_at')));
    return hashes.filter((_, i) => revoked[i] === null);
  }

  /** Revokes a key given the key itself; false when no such key exists. */
  async revokeKey(key: string): Promise<boolean> {
    const redisKey = this.topology.own(ProjectKeys).key(hashKey(key));
    if (!(await this.redis.exists(redisKey))) return false;
    await this.redis.hset(redisKey, 'revoked_at', new Date().toISOString());
    return true;
  }

  private async records(hashes: string[]): Promise<KeyRecord[]> {
    const records = await Promise.all(
      hashes.map(async (hash) => {
        const h = await this.redis.hgetall(this.topology.own(ProjectKeys).key(hash));
        return {
          id: hash.slice(0, 12),
          type: keyType(h['type']),
          prefix: h['prefix'] ?? '',
          created_at: h['created_at'] ?? '',
          revoked_at: h['revoked_at'] ?? null,
        } satisfies KeyRecord;
      }),
    );
    return records.sort((a, b) => a.created_at.localeCompare(b.created_at));
  }

  /**
   * The project and type of a live project key, or null for an unknown or revoked key and for an
   * operator key (it has no project, so the public API refuses it).
   */
  async lookupKey(key: string): Promise<KeyOwner | null> {
    const h = await this.redis.hgetall(this.topology.own(ProjectKeys).key(hashKey(key)));
    if (!h['project_id'] || h['revoked_at']) return null;
    return { project_id: h['project_id'], type: h['type'] === 'rest' ? 'rest' : 'sdk' };
  }
}

function keyType(stored: string | undefined): AnyKeyType {
  return stored === 'rest' || stored === 'operator' ? stored : 'sdk';
}
