import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { APNS_TOKEN_LIMITS, type SharedToken, type TokenStore } from './providers/apns-token.ts';

/**
 * APNs provider tokens shared through Redis by every dispatch process of a deployment: APNs
 * answers 429 TooManyProviderTokenUpdates when one (team, key) is re-signed more often than every
 * 20 minutes, which separate processes each signing their own would do.
 */
export class RedisTokenStore implements TokenStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  // While Redis cannot answer, a process signs for itself: sends go on, at the risk of a 429.
  async get(id: string): Promise<SharedToken | null> {
    const raw = await this.redis.get(this.key(id)).catch(() => null);
    return raw === null ? null : (JSON.parse(raw) as SharedToken);
  }

  async offer(id: string, token: SharedToken, replacing: string | null): Promise<SharedToken> {
    try {
      const { json } = await scripts.offerToken(this.redis, {
        keys: { token: this.key(id) },
        args: { json: JSON.stringify(token), replacing: replacing ?? '', ttlMs: APNS_TOKEN_LIMITS.refreshMs },
      });
      return JSON.parse(json) as SharedToken;
    } catch {
      return token;
    }
  }

  /** The APNs provider token every dispatch process shares for one (team, key); only this store names it. */
  private key(id: string): string {
    return this.topology.named(`apns-token:${id}`);
  }
}
