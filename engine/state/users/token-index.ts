import type { OwedDetach } from '../../infra/scripts/token-claims.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { UserKeys } from './redis-keys.ts';
import { readHashes } from './read-user.ts';
import { idDigits, parseField, subscriptionId, type SubscriptionRef } from './subscription-ids.ts';

/**
 * Which user owns each subscription token, found by the token or by the subscription's id
 * (docs/architecture.md, "The token index"). This module alone reads and writes it: an entry of
 * 16 bytes of id and `<registered_at>:<owner>` in its partition's linear hash table
 * (engine/infra/scripts/lua/claimToken-2.lua), and the detaches owed on a token. The owner's record holds the
 * token itself, so the id alone leads to it. Records of 0.11.1 (`token:…`, `subid:…`) are adopted
 * by the layout upgrade (engine/state/users/layout.ts), and on a claim within its window.
 */
export class TokenIndex {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  /**
   * Records a registration (the newest wins) and returns the detaches owed on the token. `legacy`:
   * the install may still hold the token's record of 0.11.1, adopted first (layout.ts's window).
   */
  async claim(project: string, ref: SubscriptionRef, externalId: string, registeredAt: number, legacy: boolean): Promise<OwedDetach[]> {
    if (legacy) await this.adoptLegacy(project, ref);
    const id = digitsOf(project, ref);
    const { owed } = await scripts.claimToken(this.redis, {
      keys: { index: this.topology.own(UserKeys).tokenIndex(id), owed: this.topology.own(UserKeys).tokenDetaches(id) },
      args: { id, externalId, registeredAt },
      owed: [],
    });
    return owed;
  }

  /** Forgets a detach once its entry is appended, if it is still the one owed; whether it was. */
  async cleared(project: string, ref: SubscriptionRef, detach: OwedDetach): Promise<boolean> {
    return (await scripts.clearDetach(this.redis, { keys: { owed: this.topology.own(UserKeys).tokenDetaches(digitsOf(project, ref)) }, args: { ...detach } })).cleared;
  }

  /** The token's owner, or null when no one registered it. */
  async owner(project: string, ref: SubscriptionRef): Promise<string | null> {
    const owner = await this.ownerOf(digitsOf(project, ref));
    return owner ?? (await this.redis.hget(this.topology.own(UserKeys).legacyToken(project, ref.type, ref.token), 'owner'));
  }

  /** The subscription of each id, or null for an id no registration made (one auto-pipelined round per step). */
  async resolve(project: string, ids: readonly string[]): Promise<(SubscriptionRef | null)[]> {
    return Promise.all(
      ids.map(async (id) => {
        const digits = idDigits(id);
        const owner = digits === null ? null : await this.ownerOf(digits);
        if (owner === null) return this.legacyRef(project, id);
        const subs = (await readHashes(this.redis, this.topology, project, owner)).subs;
        const field = Object.keys(subs).find((f) => {
          const ref = parseField(f);
          return ref !== null && subscriptionId(project, ref.type, ref.token) === id;
        });
        return field === undefined ? null : parseField(field);
      }),
    );
  }

  /**
   * Moves a token's record of 0.11.1 into the index, with the detaches it owed, then deletes it and
   * its id key: a claim on the same token runs only after, so the newest registration still wins.
   * A token without such a record costs one read: an id key alone (a settlement of 0.11.1 cut
   * short) names nothing the index misses, and the layout upgrade deletes those.
   */
  async adoptLegacy(project: string, ref: SubscriptionRef): Promise<void> {
    const key = this.topology.own(UserKeys).legacyToken(project, ref.type, ref.token);
    const record = await this.redis.hgetall(key);
    if (Object.keys(record).length === 0) return;
    const owner = record['owner'];
    if (owner !== undefined) {
      const owed = Object.entries(record).flatMap(([field, at]) => (field.startsWith('d:') ? [{ externalId: field.slice(2), registeredAt: at }] : []));
      const id = digitsOf(project, ref);
      await scripts.claimToken(this.redis, {
        keys: { index: this.topology.own(UserKeys).tokenIndex(id), owed: this.topology.own(UserKeys).tokenDetaches(id) },
        args: { id, externalId: owner, registeredAt: record['registered_at'] ?? '0' },
        owed,
      });
    }
    await this.redis.del(key);
    await this.redis.del(this.topology.own(UserKeys).legacySubscriptionId(project, subscriptionId(project, ref.type, ref.token)));
  }

  private async ownerOf(digits: string): Promise<string | null> {
    const { entry } = await scripts.tokenOwner(this.redis, { keys: { index: this.topology.own(UserKeys).tokenIndex(digits) }, args: { id: digits } });
    return entry === null ? null : entry.slice(entry.indexOf(':') + 1);
  }

  /** An id of 0.11.1 whose token the upgrade has not adopted yet. */
  private async legacyRef(project: string, id: string): Promise<SubscriptionRef | null> {
    const field = await this.redis.get(this.topology.own(UserKeys).legacySubscriptionId(project, id));
    return field === null ? null : parseField(field);
  }
}

/** The 32 hex digits of a subscription's id. */
function digitsOf(project: string, ref: SubscriptionRef): string {
  return subscriptionId(project, ref.type, ref.token).replaceAll('-', '');
}
