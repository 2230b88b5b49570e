import type { StoredSubscription } from '../../../schemas/state.ts';
import type { SubscriptionView, UserView } from '../../../schemas/users.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { UserKeys } from './redis-keys.ts';
import { parseConsent } from './consent.ts';
import { subscriptionId } from './subscription-ids.ts';
import { decodeTag } from './tag-codec.ts';
import { decodeUserRecord, type UserHashes } from './user-record.ts';

export type { UserHashes };

/** The record a dispatch script reads for one user (engine/infra/scripts/dispatch.ts), and its partition, hashed once for both. */
export function recordOf(topology: Topology, project: string, externalId: string): { partition: number; user: string } {
  return topology.own(UserKeys).recordOf(project, externalId);
}

/**
 * The applied state of one user as `GET /api/users/{external_id}` shows it (schemas/users.ts), or
 * null when the user is not created (their record holds at most their consent).
 */
export async function readUser(redis: RedisClient, topology: Topology, project: string, externalId: string): Promise<UserView | null> {
  return userView(project, externalId, await readHashes(redis, topology, project, externalId));
}

/**
 * One user's record, in the shape of the four hashes that held it before (engine/state/users/user-record.ts);
 * those hashes themselves for a user of 0.11.1 the layout upgrade has not reached yet.
 */
export async function readHashes(redis: Pick<RedisClient, 'getBuffer' | 'hgetall'>, topology: Topology, project: string, externalId: string): Promise<UserHashes> {
  const packed = await redis.getBuffer(topology.own(UserKeys).user(project, externalId));
  if (packed !== null) return decodeUserRecord(packed);
  const legacy = topology.own(UserKeys).legacyUser(project, externalId);
  const [user, tags, subs, consent] = await Promise.all([redis.hgetall(legacy.user), redis.hgetall(legacy.tags), redis.hgetall(legacy.subs), redis.hgetall(legacy.consent)]);
  return { user, tags, subs, consent };
}

/** A user's view from its record; null when it has no created_at (no such user). */
function userView(project: string, externalId: string, hashes: UserHashes): UserView | null {
  const { user, tags, subs, consent } = hashes;
  if (user['created_at'] === undefined) return null;
  const view: UserView = {
    external_id: externalId,
    // No prototype: a tag may be named "__proto__" (a plain {} would swallow it).
    tags: Object.create(null) as UserView['tags'],
    subscriptions: [],
    consent: {},
    created_at: isoOf(user['created_at']),
    updated_at: isoOf(user['updated_at'] ?? user['created_at']),
  };
  for (const [key, stored] of Object.entries(tags)) {
    if (stored !== '') view.tags[key] = decodeTag(stored);
  }
  const stored = Object.values(subs)
    .map(parseSubscription)
    .filter((s): s is StoredSubscription => s !== null)
    .sort((a, b) => a.registered_at - b.registered_at);
  view.subscriptions = stored.map((s) => subscriptionView(project, s));
  for (const [type, c] of Object.entries(parseConsent(consent))) {
    view.consent[type] = { opted_out: c.opted_out, at: new Date(c.at).toISOString() };
  }
  return view;
}

/** A subscription without its secrets: its id, and only the token's last 4 characters. */
export function subscriptionView(project: string, s: StoredSubscription): SubscriptionView {
  return {
    id: subscriptionId(project, s.type, s.token),
    type: s.type,
    token_tail: `…${s.token.slice(-4)}`,
    device_model: s.device_model ?? null,
    device_os: s.device_os ?? null,
    app_version: s.app_version ?? null,
    state: s.state,
    updated_at: new Date(s.updated_at).toISOString(),
  };
}

/** A subscription as stored in a user's subs hash (JSON), or null when it is not one. */
export function parseSubscription(json: string): StoredSubscription | null {
  try {
    const value = JSON.parse(json) as StoredSubscription;
    return typeof value === 'object' && value !== null && typeof value.token === 'string' ? value : null;
  } catch {
    return null;
  }
}

/** Stored times are ms since the epoch, as decimal text. */
function isoOf(ms: string): string {
  const n = Number(ms);
  return new Date(Number.isFinite(n) ? n : 0).toISOString();
}
