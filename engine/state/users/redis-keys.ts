import type { SubscriptionType } from '../../../schemas/sdk.ts';
import { escapeGlob, fnv1a, type Topology } from '../../infra/redis/topology.ts';

/**
 * The keys of users' state: their records, the idempotency window, the token index, and the keys
 * of 0.11.1 that the upgrade in place reads (docs/architecture.md, "Redis keys"). Only the modules of
 * engine/state/users/ import it.
 */
export class UserKeys {
  constructor(private readonly topology: Topology) {}

  /** A user's record (engine/infra/scripts/lua/include/user.lua, engine/state/users/user-record.ts): one string key per user. */
  user(project: string, externalId: string): string {
    return this.topology.ofUser('usr', project, externalId);
  }

  /** The four hashes of a user as 0.11.1 kept them, which the layout upgrade folds into the record (engine/state/users/layout.ts). */
  legacyUser(project: string, externalId: string): { user: string; tags: string; subs: string; consent: string } {
    const of = (kind: string): string => this.topology.ofUser(kind, project, externalId);
    return { user: of('user'), tags: of('tags'), subs: of('subs'), consent: of('consent') };
  }

  /** SCAN patterns of the keys of partition N by which a user of 0.11.1 exists: their user hash, or their consent alone. */
  legacyUserPatterns(partition: number): string[] {
    return ['user', 'consent'].map((kind) => `${escapeGlob(this.topology.inPartition(partition, kind))}*`);
  }

  /** The user a key of legacyUser names, or null for another key. */
  userOfLegacyKey(key: string): { project: string; externalId: string } | null {
    const match = /^(?:user|consent):\{p\d+\}:([^:]+):(.+)$/s.exec(key.slice(this.topology.prefix.length));
    return key.startsWith(this.topology.prefix) && match?.[1] !== undefined && match[2] !== undefined ? { project: match[1], externalId: match[2] } : null;
  }

  /** An event idempotency marker as 0.11.1 wrote it, one key per event; applyBatch still reads them (engine/state/users/layout.ts). */
  legacyEventIdempotency(partition: number, project: string, key: string): string {
    return `${this.topology.inPartition(partition, 'idem')}${project}:${key}`;
  }

  /** Until when (ms, text) partition N may still meet 0.11.1's layout: its idempotency markers, users and token records. */
  legacyLayoutUntil(partition: number): string {
    return `${this.topology.inPartition(partition, 'idw')}legacy`;
  }

  /** The record of which Redis layout migrations have run (engine/state/users/layout.ts). */
  layout(): string {
    return `${this.topology.prefix}layout`;
  }

  /**
   * The key prefixes of partition N that applyBatch completes inside Redis: with
   * `<project>:<external_id>` for a user's keys, `<project>:<key>` for an event idempotency key, and
   * the writer id for a writer's sequence; `window` is the prefix of the idempotency window's
   * tables (`<day>` and `<day>:<bucket>`) and of legacyLayoutUntil. Only this class lays keys out.
   */
  applyKeyPrefixes(partition: number): Record<'user' | 'idem' | 'window' | 'writer', string> {
    const of = (kind: string): string => this.topology.inPartition(partition, kind);
    return { user: of('usr'), idem: of('idem'), window: of('idw'), writer: of('writer') };
  }

  /** The record of one user a dispatch job reads, and its partition, hashed once for both. */
  recordOf(project: string, externalId: string): { partition: number; user: string } {
    const partition = this.topology.partitionOf(project, externalId);
    return { partition, user: `${this.topology.inPartition(partition, 'usr')}${project}:${externalId}` };
  }

  /**
   * The token index of the partition of subscription id `id` (32 hex digits; its first 4 bytes
   * pick the partition): a linear hash table (engine/infra/scripts/lua/include/lhash.lua), `tok:{pT}` and its
   * buckets `tok:{pT}:<i>` (engine/state/users/token-index.ts).
   */
  tokenIndex(id: string): string {
    return `${this.topology.prefix}tok:${this.topology.tag(this.tokenPartitionOfId(id))}`;
  }

  /** The detaches owed on the token of subscription id `id`, by external_id (engine/infra/scripts/lua/claimToken-2.lua). */
  tokenDetaches(id: string): string {
    return `${this.topology.prefix}tokd:${this.topology.tag(this.tokenPartitionOfId(id))}:${id}`;
  }

  /** A token's ownership record as 0.11.1 kept it, one hash per token (engine/state/users/token-index.ts adopts them). */
  legacyToken(project: string, type: SubscriptionType, token: string): string {
    const partition = fnv1a(project, type, token) % this.topology.partitions;
    return `${this.topology.prefix}token:${this.topology.tag(partition)}:${project}:${type}:${token}`;
  }

  /** 0.11.1's index of subscription id `id` (UUID text) to `TYPE:token`, one key per id. */
  legacySubscriptionId(project: string, id: string): string {
    return `${this.topology.prefix}subid:${project}:${id}`;
  }

  /** SCAN patterns of 0.11.1's token records and subscription id keys. */
  legacyTokenPatterns(): { tokens: string; ids: string } {
    return { tokens: `${escapeGlob(this.topology.prefix)}token:*`, ids: `${escapeGlob(this.topology.prefix)}subid:*` };
  }

  /** The token a key of legacyToken names, or null for another key. */
  tokenOfLegacyKey(key: string): { project: string; type: string; token: string } | null {
    const match = /^token:\{p\d+\}:([^:]+):([^:]+):(.+)$/s.exec(key.slice(this.topology.prefix.length));
    return key.startsWith(this.topology.prefix) && match?.[1] !== undefined && match[2] !== undefined && match[3] !== undefined ? { project: match[1], type: match[2], token: match[3] } : null;
  }

  private tokenPartitionOfId(id: string): number {
    return Number.parseInt(id.slice(0, 8), 16) % this.topology.partitions;
  }
}
