import type { SubscriptionType } from '../../../schemas/sdk.ts';

/** Consumer group of the ingest streams (the partition actors); applyBatch gets it as ARGV group. */
export const APPLY_GROUP = 'apply';
/** Consumer group of the notifications stream (fan-out workers). */
export const FANOUT_GROUP = 'fanout';
/** Consumer group of the dispatch streams (dispatch workers). */
export const DISPATCH_GROUP = 'dispatch';
/** Consumer group of the changes and outcomes streams (the recorder). */
export const RECORDER_GROUP = 'recorder';
/** Consumer group of the changes and outcomes streams that the webhooks role taps for events. */
export const WEBHOOKS_GROUP = 'webhooks';

/**
 * Redis key and stream names, and partitioning. Every key an apply touches carries the partition's
 * hash tag `{pN}` so one script call stays in one Redis Cluster slot. The layout is listed in
 * docs/architecture.md, "Redis keys".
 */
export class Topology {
  constructor(
    readonly prefix: string,
    readonly partitions: number,
  ) {}

  /** Stable partition of a user: FNV-1a over UTF-8 of `project \0 external_id`, mod PARTITIONS. */
  partitionOf(project: string, externalId: string): number {
    return fnv1a(`${project}\0${externalId}`) % this.partitions;
  }


  tag(partition: number): string {
    return `{p${partition}}`;
  }

  ingest(partition: number): string {
    return `${this.prefix}ingest:${this.tag(partition)}`;
  }

  changes(partition: number): string {
    return `${this.prefix}changes:${this.tag(partition)}`;
  }

  outcomes(partition: number): string {
    return `${this.prefix}outcomes:${this.tag(partition)}`;
  }

  outbox(partition: number): string {
    return `${this.prefix}outbox:${this.tag(partition)}`;
  }

  applied(partition: number): string {
    return `${this.prefix}applied:${this.tag(partition)}`;
  }

  lease(partition: number): string {
    return `${this.prefix}lease:${this.tag(partition)}`;
  }

  recorderLease(partition: number): string {
    return `${this.prefix}lease:recorder:${this.tag(partition)}`;
  }

  /** Per stream kind of partition N, the recorder round (token) its batch in flight went into. */
  recorderMarks(partition: number): string {
    return `${this.prefix}recorder:marks:${this.tag(partition)}`;
  }

  /** A recorder round's manifest: the batches one insert carries (actors/recorder/rounds.ts). */
  recorderRound(token: string): string {
    return `${this.prefix}recorder:round:${token}`;
  }

  /** A user's record (engine/infra/scripts/lua/include/user.lua, engine/state/users/user-record.ts): one string key per user. */
  user(project: string, externalId: string): string {
    return this.userKey('usr', project, externalId);
  }

  /** The four hashes of a user as 0.11.1 kept them, which the layout upgrade folds into the record (engine/state/users/layout.ts). */
  legacyUser(project: string, externalId: string): { user: string; tags: string; subs: string; consent: string } {
    const of = (kind: string): string => this.userKey(kind, project, externalId);
    return { user: of('user'), tags: of('tags'), subs: of('subs'), consent: of('consent') };
  }

  /** SCAN patterns of the keys of partition N by which a user of 0.11.1 exists: their user hash, or their consent alone. */
  legacyUserPatterns(partition: number): string[] {
    return ['user', 'consent'].map((kind) => `${escapeGlob(this.keyPrefix(partition, kind))}*`);
  }

  /** The user a key of legacyUser names, or null for another key. */
  userOfLegacyKey(key: string): { project: string; externalId: string } | null {
    const match = /^(?:user|consent):\{p\d+\}:([^:]+):(.+)$/s.exec(key.slice(this.prefix.length));
    return key.startsWith(this.prefix) && match?.[1] !== undefined && match[2] !== undefined ? { project: match[1], externalId: match[2] } : null;
  }

  /** An event idempotency marker as 0.11.1 wrote it, one key per event; applyBatch still reads them (engine/state/users/layout.ts). */
  legacyEventIdempotency(partition: number, project: string, key: string): string {
    return `${this.keyPrefix(partition, 'idem')}${project}:${key}`;
  }

  /** Until when (ms, text) partition N may still hold markers of 0.11.1 that applyBatch looks up. */
  legacyIdempotencyUntil(partition: number): string {
    return `${this.keyPrefix(partition, 'idw')}legacy`;
  }

  /** The record of which Redis layout migrations have run (engine/state/users/layout.ts). */
  layout(): string {
    return `${this.prefix}layout`;
  }

  /** The last sequence number applied in partition N of a gateway writer's entries (applyBatch). */
  writer(partition: number, writerId: string): string {
    return `${this.keyPrefix(partition, 'writer')}${writerId}`;
  }

  /**
   * The key prefixes of partition N that applyBatch completes inside Redis: with
   * `<project>:<external_id>` for a user's keys, `<project>:<key>` for an event idempotency key, and
   * the writer id for a writer's sequence; `window` is the prefix of the idempotency window's
   * tables (`<day>` and `<day>:<bucket>`) and of legacyIdempotencyUntil. Only this class lays keys out.
   */
  applyKeyPrefixes(partition: number): Record<'user' | 'idem' | 'window' | 'writer', string> {
    const of = (kind: string): string => this.keyPrefix(partition, kind);
    return { user: of('usr'), idem: of('idem'), window: of('idw'), writer: of('writer') };
  }

  /** The record of one user a dispatch job reads, and its partition, hashed once for both. */
  userKeys(project: string, externalId: string): { partition: number; user: string } {
    const partition = this.partitionOf(project, externalId);
    return { partition, user: this.keyIn(partition, 'usr', project, externalId) };
  }

  /** A user's sends of one channel in the frequency-cap window (engine/infra/scripts/lua/takeCapSlot-1.lua). */
  frequencySends(project: string, externalId: string, channel: string): string {
    return `${this.userKey('fcap', project, externalId)}:${channel}`;
  }

  /**
   * The token index of the partition of subscription id `id` (32 hex digits; its first 4 bytes
   * pick the partition): a linear hash table (engine/infra/scripts/lua/include/lhash.lua), `tok:{pT}` and its
   * buckets `tok:{pT}:<i>` (engine/state/users/token-index.ts).
   */
  tokenIndex(id: string): string {
    return `${this.prefix}tok:${this.tag(this.tokenPartitionOfId(id))}`;
  }

  /** The detaches owed on the token of subscription id `id`, by external_id (engine/infra/scripts/lua/claimToken-2.lua). */
  tokenDetaches(id: string): string {
    return `${this.prefix}tokd:${this.tag(this.tokenPartitionOfId(id))}:${id}`;
  }

  /** A token's ownership record as 0.11.1 kept it, one hash per token (engine/state/users/token-index.ts adopts them). */
  legacyToken(project: string, type: SubscriptionType, token: string): string {
    const partition = fnv1a(`${project}\0${type}\0${token}`) % this.partitions;
    return `${this.prefix}token:${this.tag(partition)}:${project}:${type}:${token}`;
  }

  /** 0.11.1's index of subscription id `id` (UUID text) to `TYPE:token`, one key per id. */
  legacySubscriptionId(project: string, id: string): string {
    return `${this.prefix}subid:${project}:${id}`;
  }

  /** SCAN patterns of 0.11.1's token records and subscription id keys. */
  legacyTokenPatterns(): { tokens: string; ids: string } {
    return { tokens: `${escapeGlob(this.prefix)}token:*`, ids: `${escapeGlob(this.prefix)}subid:*` };
  }

  /** The token a key of legacyToken names, or null for another key. */
  tokenOfLegacyKey(key: string): { project: string; type: string; token: string } | null {
    const match = /^token:\{p\d+\}:([^:]+):([^:]+):(.+)$/s.exec(key.slice(this.prefix.length));
    return key.startsWith(this.prefix) && match?.[1] !== undefined && match[2] !== undefined && match[3] !== undefined ? { project: match[1], type: match[2], token: match[3] } : null;
  }

  workers(): string {
    return `${this.prefix}workers`;
  }

  recorderWorkers(): string {
    return `${this.prefix}workers:recorder`;
  }

  project(id: string): string {
    return `${this.prefix}project:${id}`;
  }

  projectKeys(id: string): string {
    return `${this.prefix}project:${id}:keys`;
  }

  providers(id: string): string {
    return `${this.prefix}project:${id}:providers`;
  }

  segments(id: string): string {
    return `${this.prefix}project:${id}:segments`;
  }

  templates(id: string): string {
    return `${this.prefix}project:${id}:templates`;
  }

  projects(): string {
    return `${this.prefix}projects`;
  }

  key(hash: string): string {
    return `${this.prefix}key:${hash}`;
  }

  /** The hashes of the operator keys (set); each key's record is at key(hash). */
  operatorKeys(): string {
    return `${this.prefix}operator:keys`;
  }

  /** The rate-limit bucket of a key, by its hash: one key, so one slot on a Redis Cluster. */
  rateBucket(hash: string): string {
    return `${this.prefix}rate:${hash}`;
  }

  /** A webhook endpoint's record (hash: config and health); its keys share the tag `{w<id>}`. */
  webhook(id: string): string {
    return `${this.prefix}webhook:{w:${id}}`;
  }

  /** A webhook endpoint's queue of events to deliver (stream), oldest first. */
  webhookQueue(id: string): string {
    return `${this.prefix}whq:{w:${id}}`;
  }

  /** Which webhooks process sends to an endpoint (lease). */
  webhookLease(id: string): string {
    return `${this.prefix}whlease:{w:${id}}`;
  }

  /** Every webhook endpoint's id (set); per project, projectWebhooks. */
  webhooks(): string {
    return `${this.prefix}webhooks`;
  }

  projectWebhooks(project: string): string {
    return `${this.prefix}project:${project}:webhooks`;
  }

  /** Bumped on every endpoint created, deleted or disabled: readers reload their copy. */
  webhooksVersion(): string {
    return `${this.prefix}webhooks:version`;
  }

  /** Notifications watched for their end (sorted set of `project id` by created_at), and per project how far its list was read. */
  webhooksWatch(): string {
    return `${this.prefix}webhooks:watch`;
  }

  webhooksWatchCursor(project: string): string {
    return `${this.prefix}webhooks:watch:${project}`;
  }

  /** The lease of the one process that watches notifications for webhooks. */
  webhooksWatcherLease(): string {
    return `${this.prefix}lease:webhooks:watcher`;
  }

  webhooksLease(partition: number): string {
    return `${this.prefix}lease:webhooks:${this.tag(partition)}`;
  }

  webhooksWorkers(): string {
    return `${this.prefix}workers:webhooks`;
  }

  /** A notification's record (hash): its own hash tag, so its keys share a slot. */
  notification(id: string): string {
    return `${this.prefix}notif:{n:${id}}`;
  }

  /** A notification's throttle bucket (takeToken), next to its record. */
  notificationRate(id: string): string {
    return `${this.prefix}nrate:{n:${id}}`;
  }

  /** Pub/sub channel of delivery records as the recorder inserts them (GET /api/deliveries/live). */
  liveDeliveries(): string {
    return `${this.prefix}live:deliveries`;
  }

  /** A project's notifications (sorted set of ids scored by created_at): GET /api/notifications. */
  notificationList(project: string): string {
    return `${this.prefix}nlist:${project}`;
  }

  /** An idempotency key of POST /api/notifications: the notification it created, for 30 days. */
  notificationIdempotency(project: string, key: string): string {
    return `${this.prefix}nidem:${project}:${key}`;
  }

  /** Notifications ready for fan-out (stream, group FANOUT_GROUP); one slot with `scheduled`. */
  notifications(): string {
    return `${this.prefix}{notifications}:log`;
  }

  /** Notifications waiting for their send_after (sorted set scored by it). */
  scheduled(): string {
    return `${this.prefix}{notifications}:scheduled`;
  }

  /** Dispatch jobs of the users of partition N (stream, group DISPATCH_GROUP). */
  dispatch(partition: number): string {
    return `${this.prefix}dispatch:${this.tag(partition)}`;
  }

  /** Dispatch jobs of partition N waiting for a retry (sorted set scored by due time). */
  retries(partition: number): string {
    return `${this.prefix}retry:${this.tag(partition)}`;
  }

  /** A notification's counters in partition N: jobs, done, sent, failed, skipped, last_at. */
  notificationCounts(partition: number, id: string): string {
    return `${this.prefix}ncount:${this.tag(partition)}:${id}`;
  }

  /**
   * A notification's cancel mark in partition N (string, the cancel time): dispatch reads it with
   * the user's consent in one call in the partition's slot (engine/infra/scripts/lua/checkSend-2.lua).
   */
  notificationCanceled(partition: number, id: string): string {
    return `${this.prefix}ncancel:${this.tag(partition)}:${id}`;
  }

  /** The users of partition N a notification's fan-out appended (set): a resumed fan-out skips them. */
  notificationFanned(partition: number, id: string): string {
    return `${this.prefix}nfan:${this.tag(partition)}:${id}`;
  }

  /** The APNs provider token every dispatch process shares for one (team, key). */
  apnsToken(id: string): string {
    return `${this.prefix}apns-token:${id}`;
  }

  dispatchLease(partition: number): string {
    return `${this.prefix}lease:dispatch:${this.tag(partition)}`;
  }

  dispatchWorkers(): string {
    return `${this.prefix}workers:dispatch`;
  }

  private tokenPartitionOfId(id: string): number {
    return Number.parseInt(id.slice(0, 8), 16) % this.partitions;
  }

  private userKey(kind: string, project: string, externalId: string): string {
    return this.keyIn(this.partitionOf(project, externalId), kind, project, externalId);
  }

  private keyIn(partition: number, kind: string, project: string, externalId: string): string {
    return `${this.keyPrefix(partition, kind)}${project}:${externalId}`;
  }

  private keyPrefix(partition: number, kind: string): string {
    return `${this.prefix}${kind}:${this.tag(partition)}:`;
  }
}

const encoder = new TextEncoder();

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Text matched literally by a SCAN pattern. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
