import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/**
 * Redis as an earlier release left it (test/upgrade/capture.ts writes the fixtures), written into a
 * test's own key prefix. Key names are kept as captured, hash tags (`{pN}`, `{n:id}`, `{w:id}`)
 * included, so every key lands in the slot and partition the release put it in. One Redis node
 * only: both ends take a plain client, and a SCAN sees the keys of its own node.
 */

/** One key as captured; `ttl_ms` is its PTTL then (null: none), restored counting from the load. */
export type FixtureKey = { ttl_ms: number | null } & FixtureValue;

export type FixtureValue =
  | { type: 'string'; value: string }
  | { type: 'hash'; value: Record<string, string> }
  | { type: 'set'; value: string[] }
  | { type: 'zset'; value: [member: string, score: string][] }
  | { type: 'list'; value: string[] }
  | { type: 'stream'; value: FixtureStream };

export interface FixtureStream {
  /** Entries in ID order, each its ID and its flat field, value list. */
  entries: [id: string, fields: string[]][];
  last_id: string;
  max_deleted_id: string;
  entries_added: number;
  groups: FixtureGroup[];
}

export interface FixtureGroup {
  name: string;
  last_delivered_id: string;
  /** null when Redis did not know it. */
  entries_read: number | null;
  consumers: string[];
  /** Entries read and not acknowledged: how long since their last delivery, and how often delivered. */
  pending: { id: string; consumer: string; idle_ms: number; deliveries: number }[];
}

/** A user of the workload, as the capture wrote it. */
export interface FixtureUser {
  external_id: string;
  partition: number;
  tags: Record<string, string | number>;
  /** Subscriptions the user holds once every write is applied. */
  subscriptions: { type: string; token: string }[];
  /** Subscription types the user is opted out of. */
  opted_out: string[];
}

/** An event sent with an idempotency key; `recorded` says whether the release recorded it. */
export interface IdempotentSend {
  external_id: string;
  partition: number;
  key: string;
  name: string;
  recorded: boolean;
}

export interface UpgradeFixture {
  release: string;
  commit: string;
  captured_at: string;
  prefix_stripped: string;
  partitions: number;
  project: { project_id: string; sdk_key: string; rest_key: string; identity_secret: string };
  users: FixtureUser[];
  /** A token registered by `from`, then by `to`, which took it over. */
  moved_token: { type: string; token: string; from: string; to: string };
  /** An opt-out sent before its user was known: 0.11.1 kept the consent alone. */
  consent_only: { external_id: string; subscription_type: string };
  idempotency: {
    sent: IdempotentSend[];
    /** A key the release saw for one user, and a user of the same partition it never saw it for. */
    same_partition: { key: string; seen_for: string; external_id: string };
    /** The same, for a user of another partition. */
    other_partition: { key: string; seen_for: string; external_id: string };
  };
  notifications: {
    completed: { id: string; view: Record<string, unknown> };
    /** Sent to users whose provider held its answer: their jobs were pending when the release stopped. */
    in_flight: { id: string; held: string[]; view: Record<string, unknown> };
    scheduled: { id: string; view: Record<string, unknown> };
  };
  webhook: { id: string; secret: string; events: string[]; queued: { id: string; type: string }[] };
  segment: Record<string, unknown>;
  template: Record<string, unknown>;
  /** What the release answered to GET /api/users/{external_id}, by external_id. */
  reads: Record<string, unknown>;
  keys: Record<string, FixtureKey>;
}

export function readFixture(release: string): UpgradeFixture {
  return JSON.parse(readFileSync(new URL(`../upgrade/fixtures/${release}.json`, import.meta.url), 'utf8')) as UpgradeFixture;
}

/**
 * Writes every key of the fixture under `prefix`. A set the prefix holds already is merged (the
 * test deployment's `projects`); any other key already there is an error.
 */
export async function loadFixture(redis: Redis, prefix: string, fixture: UpgradeFixture): Promise<void> {
  for (const [name, key] of Object.entries(fixture.keys)) {
    const full = prefix + name;
    if ((await redis.exists(full)) > 0 && key.type !== 'set') throw new Error(`${full} exists already`);
    await write(redis, full, key);
    if (key.ttl_ms !== null) await redis.pexpire(full, key.ttl_ms);
  }
}

async function write(redis: Redis, key: string, k: FixtureValue): Promise<void> {
  switch (k.type) {
    case 'string':
      await redis.set(key, k.value);
      return;
    case 'hash':
      await redis.hset(key, k.value);
      return;
    case 'set':
      await redis.sadd(key, ...k.value);
      return;
    case 'zset':
      await redis.zadd(key, ...k.value.flatMap(([member, score]) => [score, member]));
      return;
    case 'list':
      await redis.rpush(key, ...k.value);
      return;
    case 'stream':
      await writeStream(redis, key, k.value);
  }
}

/**
 * A stream with its IDs, counters, groups, consumers and pending entries. The pending entries are
 * made with XCLAIM FORCE, which puts an entry of the stream in a group's pending list under a
 * consumer, with its idle time and delivery count.
 */
async function writeStream(redis: Redis, key: string, s: FixtureStream): Promise<void> {
  for (const [id, fields] of s.entries) await redis.xadd(key, id, ...fields);
  if (s.entries.length === 0) {
    // An empty stream exists only with a group made with MKSTREAM (or its entries deleted).
    await redis.call('XGROUP', 'CREATE', key, 'fixture-load', '$', 'MKSTREAM');
    await redis.call('XGROUP', 'DESTROY', key, 'fixture-load');
  }
  await redis.call('XSETID', key, s.last_id, 'ENTRIESADDED', s.entries_added, 'MAXDELETEDID', s.max_deleted_id);
  for (const g of s.groups) {
    await redis.call('XGROUP', 'CREATE', key, g.name, g.last_delivered_id, ...(g.entries_read === null ? [] : ['ENTRIESREAD', g.entries_read]));
    for (const consumer of g.consumers) await redis.call('XGROUP', 'CREATECONSUMER', key, g.name, consumer);
    for (const p of g.pending) await redis.call('XCLAIM', key, g.name, p.consumer, 0, p.id, 'IDLE', p.idle_ms, 'RETRYCOUNT', p.deliveries, 'FORCE', 'JUSTID');
  }
}

/**
 * Every key under `prefix` whose name (prefix stripped) `keep` accepts, as the fixtures hold them.
 * A value that is not UTF-8 text is an error: the fixture is JSON text.
 */
export async function dumpPrefix(redis: Redis, prefix: string, keep: (name: string) => boolean = () => true): Promise<Record<string, FixtureKey>> {
  const out: Record<string, FixtureKey> = {};
  for (const name of (await keyNames(redis, prefix)).filter(keep)) {
    const key = await dumpKey(redis, prefix + name);
    if (key !== null) out[name] = key;
  }
  return out;
}

/** The names of the keys under `prefix`, prefix stripped, sorted. */
export async function keyNames(redis: Redis, prefix: string): Promise<string[]> {
  const names: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    names.push(...keys.map((k) => k.slice(prefix.length)));
  } while (cursor !== '0');
  return names.sort();
}

/** One key, or null when it is gone (expired since the scan). */
async function dumpKey(redis: Redis, key: string): Promise<FixtureKey | null> {
  const type = await redis.type(key);
  const value = await read(redis, key, type);
  const pttl = await redis.pttl(key);
  if (value === null || pttl === -2) return null;
  return { ttl_ms: pttl === -1 ? null : pttl, ...value };
}

async function read(redis: Redis, key: string, type: string): Promise<FixtureValue | null> {
  switch (type) {
    case 'none':
      return null;
    case 'string': {
      const value = await redis.getBuffer(key);
      return value === null ? null : { type, value: text(value, key) };
    }
    case 'hash': {
      // Raw, field names included: hgetallBuffer decodes the names, and a binary one would change.
      const flat = ((await redis.callBuffer('HGETALL', key)) as Buffer[]).map((b) => text(b, key));
      const value: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) value[flat[i] ?? ''] = flat[i + 1] ?? '';
      return { type, value };
    }
    case 'set':
      return { type, value: (await redis.smembersBuffer(key)).map((m) => text(m, key)).sort() };
    case 'zset': {
      const flat = (await redis.zrangeBuffer(key, 0, -1, 'WITHSCORES')).map((b) => text(b, key));
      const value: [string, string][] = [];
      for (let i = 0; i < flat.length; i += 2) value.push([flat[i] ?? '', flat[i + 1] ?? '']);
      return { type, value };
    }
    case 'list':
      return { type, value: (await redis.lrangeBuffer(key, 0, -1)).map((b) => text(b, key)) };
    case 'stream':
      return { type, value: await readStream(redis, key) };
    default:
      throw new Error(`${key}: a ${type}, which the fixtures do not hold`);
  }
}

/** The text of a value, or an error when it is not UTF-8 (it would not come back the same). */
function text(b: Buffer, key: string): string {
  const s = b.toString('utf8');
  if (!Buffer.from(s, 'utf8').equals(b)) throw new Error(`${key}: a value that is not UTF-8 text`);
  return s;
}

/** XINFO STREAM FULL's reply, a flat list of names and values at every level, as an object. */
function pairs(reply: unknown): Record<string, unknown> {
  const list = reply as unknown[];
  const out: Record<string, unknown> = {};
  for (let i = 0; i < list.length; i += 2) out[String(list[i])] = list[i + 1];
  return out;
}

async function readStream(redis: Redis, key: string): Promise<FixtureStream> {
  const entries = (await redis.xrangeBuffer(key, '-', '+')).map(([id, fields]): [string, string[]] => [text(id, key), fields.map((f) => text(f, key))]);
  const info = pairs(await redis.call('XINFO', 'STREAM', key, 'FULL', 'COUNT', 0));
  const now = Date.now();
  const groups = ((info['groups'] as unknown[] | null) ?? []).map((raw): FixtureGroup => {
    const g = pairs(raw);
    const read = g['entries-read'];
    return {
      name: String(g['name']),
      last_delivered_id: String(g['last-delivered-id']),
      entries_read: read === null || read === undefined ? null : Number(read),
      consumers: (g['consumers'] as unknown[]).map((c) => String(pairs(c)['name'])),
      pending: (g['pending'] as unknown[][]).map(([id, consumer, deliveredAt, deliveries]) => ({
        id: String(id),
        consumer: String(consumer),
        idle_ms: Math.max(0, now - Number(deliveredAt)),
        deliveries: Number(deliveries),
      })),
    };
  });
  return {
    entries,
    last_id: String(info['last-generated-id']),
    max_deleted_id: String(info['max-deleted-entry-id']),
    entries_added: Number(info['entries-added']),
    groups,
  };
}
