import { loadConfig } from '../../engine/infra/process/config.ts';
import { appendEntry } from '../../engine/infra/redis/append.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { readHashes } from '../../engine/state/users/read-user.ts';
import { subscriptionId, type SubscriptionRef } from '../../engine/state/users/subscription-ids.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { compareIds, groupBacklog } from '../helpers/streams.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { StoredSubscription } from '../../schemas/state.ts';
import type { Change } from '../../schemas/changes.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

/** A change that is recorded as a row of its own (not a user refresh). */
export type RecordChange = Exclude<Change, { kind: 'user' } | { kind: 'users' }>;

/** Polls `check` until it returns a value other than undefined/false, or throws after `ms`. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The applied state of one user, read straight from Redis. */
export interface UserState {
  user: Record<string, string>;
  tags: Record<string, string>;
  subs: Record<string, StoredSubscription>;
}

/**
 * Writes ingest entries under a test deployment's prefix and reads back what the apply role made
 * of them. The caller closes it.
 */
export class Harness {
  readonly redis: RedisClient;
  readonly topology: Topology;
  private readonly last = new Map<number, string>();

  constructor(env: Record<string, string>) {
    const config = loadConfig(env);
    this.redis = createRedis(config);
    this.topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  }

  /** Appends entries in order (one at a time, so their order in the stream is this order). */
  async append(...entries: IngestEntry[]): Promise<string[]> {
    const ids: string[] = [];
    for (const entry of entries) {
      const id = await appendEntry(this.redis, this.topology, entry);
      this.track(entry, id);
      ids.push(id);
    }
    return ids;
  }

  /** Makes settled() wait for an entry appended elsewhere. */
  track(entry: IngestEntry, id: string): void {
    const partition = this.topology.partitionOf(entry.project, entry.external_id);
    const last = this.last.get(partition);
    if (last === undefined || compareIds(last, id) < 0) this.last.set(partition, id);
  }

  /** Waits until every entry appended so far is applied and every outbox is settled. */
  async settled(ms = 20_000): Promise<void> {
    await until(
      'entries applied and outboxes settled',
      async () => {
        for (const [partition, id] of this.last) {
          const applied = await this.redis.get(this.topology.applied(partition));
          if (applied === null || compareIds(applied, id) < 0) return false;
        }
        // In this order: a detach is appended before its outbox entry is deleted, and only the
        // subscribes checked above make outbox entries.
        for (let p = 0; p < this.topology.partitions; p++) {
          if ((await this.redis.xlen(this.topology.outbox(p))) > 0) return false;
        }
        for (let p = 0; p < this.topology.partitions; p++) {
          if ((await this.pending(p)) > 0) return false;
        }
        return true;
      },
      ms,
    );
  }

  async state(project: string, externalId: string): Promise<UserState> {
    const { user, tags, subs: rawSubs } = await readHashes(this.redis, this.topology, project, externalId);
    const subs: Record<string, StoredSubscription> = {};
    for (const [field, json] of Object.entries(rawSubs)) subs[field] = JSON.parse(json) as StoredSubscription;
    return { user, tags, subs };
  }

  /**
   * A token's entry in the token index: its owner, their registration time (ms, as text), and
   * whether it says no detach was owed on the token when written (claimToken-2.lua's mark).
   */
  async tokenEntry(project: string, ref: SubscriptionRef): Promise<{ owner: string; registered_at: string; clear: boolean } | null> {
    const id = subscriptionId(project, ref.type, ref.token).replaceAll('-', '');
    const { entry } = await scripts.tokenOwner(this.redis, { keys: { index: this.topology.own(UserKeys).tokenIndex(id) }, args: { id } });
    if (entry === null) return null;
    const colon = entry.indexOf(':');
    const clear = entry[colon - 1] === 'c';
    return { owner: entry.slice(colon + 1), registered_at: entry.slice(0, clear ? colon - 1 : colon), clear };
  }

  /** Every event and receipt change of every partition, in stream order per partition. */
  async changes(): Promise<RecordChange[]> {
    const all: RecordChange[] = [];
    for (let p = 0; p < this.topology.partitions; p++) {
      for (const [, fields] of await this.redis.xrange(this.topology.changes(p), '-', '+')) {
        const change = JSON.parse(fields[1] ?? 'null') as Change;
        if (change.kind !== 'user' && change.kind !== 'users') all.push(change);
      }
    }
    return all;
  }

  /** The users named by `user` and `users` changes, as "project:external_id", in stream order. */
  async userChanges(): Promise<string[]> {
    const all: string[] = [];
    for (let p = 0; p < this.topology.partitions; p++) {
      for (const [, fields] of await this.redis.xrange(this.topology.changes(p), '-', '+')) {
        const change = JSON.parse(fields[1] ?? 'null') as Change;
        if (change.kind === 'user') all.push(`${change.project}:${change.external_id}`);
        if (change.kind === 'users') for (const u of change.users) all.push(`${u.project}:${u.external_id}`);
      }
    }
    return all;
  }

  /** Entries of the partition's ingest stream not yet delivered to or acknowledged by the apply group. */
  async pending(partition: number): Promise<number> {
    const { pending, unread } = await groupBacklog(this.redis, this.topology.ingest(partition), 'apply');
    return pending + unread;
  }

  close(): void {
    this.redis.disconnect();
  }
}
