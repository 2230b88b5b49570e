import { Unpackr } from 'msgpackr';
import type { SubscriptionType } from '../../../schemas/sdk.ts';
import type { StoredConsent, StoredSubscription } from '../../../schemas/state.ts';

/** One user's state as four maps, field to value, as 0.11.1's four hashes held it (the recorder's and the views' input). */
export interface UserHashes {
  user: Record<string, string>;
  tags: Record<string, string>;
  subs: Record<string, string>;
  consent: Record<string, string>;
}

/** Fields of a stored subscription after its state and three times, in the record's order (engine/infra/scripts/lua/include/user.lua). */
const DEVICE_FIELDS = ['device_model', 'device_os', 'app_version', 'web_auth', 'web_p256'] as const;
const STATES = ['live', 'retired'] as const;

// Maps as Map: a tag may be named "__proto__". Times are ms, well inside a double's integers.
const unpackr = new Unpackr({ mapsAsObjects: false, useRecords: false, int64AsType: 'number' });

/**
 * A user's record as engine/infra/scripts/lua/include/user.lua writes it (MessagePack), in the shape of the four
 * hashes that held it before (the recorder's and the views' input): no record, empty parts.
 */
export function decodeUserRecord(packed: Buffer | null): UserHashes {
  // No prototype: a tag or a subscription type may be named "__proto__".
  const out: UserHashes = { user: {}, tags: Object.create(null) as Record<string, string>, subs: {}, consent: {} };
  if (packed === null) return out;
  const record = mapOf(unpackr.unpack(packed));
  const created = record.get('c');
  if (typeof created === 'number') {
    const updated = record.get('u');
    out.user = { created_at: String(created), updated_at: String(typeof updated === 'number' ? updated : created) };
  }
  for (const [key, value] of mapOf(record.get('t'))) if (typeof key === 'string' && typeof value === 'string') out.tags[key] = value;
  for (const [field, sub] of mapOf(record.get('s'))) if (typeof field === 'string' && Array.isArray(sub)) out.subs[field] = JSON.stringify(storedSubscription(field, sub));
  for (const [type, c] of mapOf(record.get('o'))) {
    if (typeof type === 'string' && Array.isArray(c)) out.consent[type] = JSON.stringify({ opted_out: c[0] === true, at: c[1] });
  }
  return out;
}

/** What the `users` mirror keeps of a user (actors/recorder/rows.ts userRow). */
export interface UserSummary {
  createdAt: number;
  updatedAt: number;
  /** Each tag as stored (engine/state/users/tag-codec.ts), '' for none. */
  tags: Map<string, string>;
  /** The types of the live subscriptions, each once. */
  live: Set<string>;
  /** The types opted out of. */
  optedOut: string[];
}

/**
 * The summary of a record, read straight from it: the recorder's path for each user an apply
 * batch changed, which decodeUserRecord's JSON texts would only cost. Null for a record
 * without a creation time (no user).
 */
export function summaryOfRecord(packed: Buffer): UserSummary | null {
  const record = mapOf(unpackr.unpack(packed));
  const created = record.get('c');
  if (typeof created !== 'number') return null;
  const updated = record.get('u');
  const tags = new Map<string, string>();
  for (const [key, value] of mapOf(record.get('t'))) if (typeof key === 'string' && typeof value === 'string') tags.set(key, value);
  const live = new Set<string>();
  for (const [field, sub] of mapOf(record.get('s'))) {
    if (typeof field === 'string' && Array.isArray(sub) && (STATES[Number(sub[0])] ?? 'live') === 'live') live.add(field.slice(0, field.indexOf(':')));
  }
  const optedOut: string[] = [];
  for (const [type, c] of mapOf(record.get('o'))) if (typeof type === 'string' && Array.isArray(c) && c[0] === true) optedOut.push(type);
  return { createdAt: created, updatedAt: typeof updated === 'number' ? updated : created, tags, live, optedOut };
}

/** What dispatch reads of a user (actors/dispatch/dispatch-handler.ts): tags still encoded. */
export interface RecipientState {
  /** The stored `language` tag; null when unset. */
  language: string | null;
  /** The stored `timezone` tag; null when unset. */
  timezone: string | null;
  /** Every tag, as a field, value list, when asked for (personal texts); else null. */
  tags: string[] | null;
  /** The subscriptions of the types asked for (only those of `only` when given), live or not. */
  subs: StoredSubscription[];
  /** The consent of the types asked for, by type. */
  consent: Partial<Record<SubscriptionType, StoredConsent>>;
}

/**
 * What a dispatch job needs of a user, read from their record (null: no user): the subscriptions
 * of `types` (or, for a retry or a notification by subscription id, the fields of `only`), the
 * consent of `types`, the language and timezone tags, and every tag when `allTags`.
 */
export function recipientOfRecord(packed: Buffer | null, types: ReadonlySet<string>, only: ReadonlySet<string> | null, allTags: boolean): RecipientState {
  const out: RecipientState = { language: null, timezone: null, tags: allTags ? [] : null, subs: [], consent: {} };
  if (packed === null) return out;
  const record = mapOf(unpackr.unpack(packed));
  for (const [key, value] of mapOf(record.get('t'))) {
    if (typeof key !== 'string' || typeof value !== 'string') continue;
    if (key === 'language') out.language = value;
    else if (key === 'timezone') out.timezone = value;
    out.tags?.push(key, value);
  }
  for (const [field, sub] of mapOf(record.get('s'))) {
    if (typeof field === 'string' && Array.isArray(sub) && types.has(field.slice(0, field.indexOf(':'))) && (only === null || only.has(field))) out.subs.push(storedSubscription(field, sub));
  }
  for (const [type, c] of mapOf(record.get('o'))) {
    if (typeof type === 'string' && Array.isArray(c) && types.has(type) && typeof c[1] === 'number') out.consent[type as SubscriptionType] = { opted_out: c[0] === true, at: c[1] };
  }
  return out;
}

/** A stored subscription of the record, as schemas/state.ts StoredSubscription (its JSON's fields in this order). */
function storedSubscription(field: string, sub: unknown[]): StoredSubscription {
  const colon = field.indexOf(':');
  const stored: Record<string, unknown> = {
    type: field.slice(0, colon),
    token: field.slice(colon + 1),
    state: STATES[Number(sub[0])] ?? 'live',
    created_at: sub[1],
    updated_at: sub[2],
    registered_at: sub[3],
  };
  DEVICE_FIELDS.forEach((name, i) => {
    const v = sub[4 + i];
    if (typeof v === 'string') stored[name] = v;
  });
  return stored as StoredSubscription;
}

const NO_ENTRIES: ReadonlyMap<unknown, unknown> = new Map();

/**
 * A decoded map as it is, not copied (its readers skip keys that are not strings); anything else
 * (Lua packs an empty map as an empty array) has no entries.
 */
function mapOf(value: unknown): ReadonlyMap<unknown, unknown> {
  return value instanceof Map ? (value as ReadonlyMap<unknown, unknown>) : NO_ENTRIES;
}
