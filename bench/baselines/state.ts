import type { Redis } from 'ioredis';
import type { SdkOp, SubscriptionBody, TagsBody } from '../../schemas/sdk.ts';

/** A BullMQ job's data: one SDK operation as `/api/sdk/batch` spells it, and when it was accepted. */
export interface WriteJob {
  write: SdkOp;
  /** ms since the epoch. */
  at: number;
}

/** Name of the BullMQ queue; its keys live under `<KEY_PREFIX>bull:`. */
export const QUEUE = 'sdk';

/** Where a user's state lives: four hashes under the prefix (metadata, tags, subscriptions, event counts). */
export function userKeys(prefix: string, externalId: string): { meta: string; tags: string; subs: string; events: string } {
  const base = `${prefix}user:${externalId}`;
  return { meta: base, tags: `${base}:tags`, subs: `${base}:subs`, events: `${base}:events` };
}

/** What the worker keeps of a subscription (WEB_PUSH keys are not needed to read it back). */
interface StoredSubscription {
  type: SubscriptionBody['type'];
  token: string;
  device_model?: string | undefined;
  device_os?: string | undefined;
  app_version?: string | undefined;
  updated_at: number;
}

/**
 * Applies one write in one MULTI: tags merged (`""` or null deletes), a subscription stored by
 * (type, token), events and receipts counted by name. Unlike the engine there is no per-user
 * order (jobs run concurrently) and no dedup of a redelivered job: what a plain queue gives.
 */
export async function applyWrite(redis: Redis, prefix: string, job: WriteJob): Promise<void> {
  const { write, at } = job;
  const keys = userKeys(prefix, write.external_id);
  const multi = redis.multi().hsetnx(keys.meta, 'created_at', at).hset(keys.meta, 'updated_at', at);
  switch (write.op) {
    case 'identify':
    case 'tags':
      mergeTags(multi, keys.tags, write.tags ?? {});
      break;
    case 'subscribe': {
      const { type, token, device_model, device_os, app_version } = write;
      const stored: StoredSubscription = { type, token, device_model, device_os, app_version, updated_at: at };
      multi.hset(keys.subs, `${type}:${token}`, JSON.stringify(stored));
      break;
    }
    case 'event':
      multi.hincrby(keys.events, write.name, 1);
      break;
    case 'receipt':
      multi.hincrby(keys.events, `receipt:${write.kind}`, 1);
      break;
  }
  await multi.exec();
}

function mergeTags(multi: ReturnType<Redis['multi']>, key: string, tags: TagsBody): void {
  const set: Record<string, string> = {};
  const deleted: string[] = [];
  for (const [name, value] of Object.entries(tags)) {
    if (value === null || value === '') deleted.push(name);
    else set[name] = JSON.stringify(value);
  }
  if (Object.keys(set).length > 0) multi.hset(key, set);
  if (deleted.length > 0) multi.hdel(key, ...deleted);
}

/** A compatible subset of the engine's `GET /api/users/{external_id}` answer (docs/api.md#users-and-events). */
export interface UserState {
  external_id: string;
  tags: Record<string, string | number>;
  subscriptions: {
    type: SubscriptionBody['type'];
    token_tail: string;
    device_model: string | null;
    device_os: string | null;
    app_version: string | null;
    state: 'live';
    updated_at: string;
  }[];
  consent: Record<string, never>;
  created_at: string;
  updated_at: string;
}

/** The applied state of a user, or null when no write for them has been applied yet. */
export async function readUser(redis: Redis, prefix: string, externalId: string): Promise<UserState | null> {
  const keys = userKeys(prefix, externalId);
  const [meta, tags, subs] = await Promise.all([redis.hgetall(keys.meta), redis.hgetall(keys.tags), redis.hgetall(keys.subs)]);
  if (meta['created_at'] === undefined) return null;
  const iso = (ms: string | undefined): string => new Date(Number(ms ?? 0)).toISOString();
  const subscriptions = Object.values(subs)
    .map((json) => JSON.parse(json) as StoredSubscription)
    .sort((a, b) => a.updated_at - b.updated_at)
    .map((s) => ({
      type: s.type,
      token_tail: `…${s.token.slice(-4)}`,
      device_model: s.device_model ?? null,
      device_os: s.device_os ?? null,
      app_version: s.app_version ?? null,
      state: 'live' as const,
      updated_at: new Date(s.updated_at).toISOString(),
    }));
  return {
    external_id: externalId,
    tags: Object.fromEntries(Object.entries(tags).map(([name, json]) => [name, JSON.parse(json) as string | number])),
    subscriptions,
    consent: {},
    created_at: iso(meta['created_at']),
    updated_at: iso(meta['updated_at']),
  };
}
