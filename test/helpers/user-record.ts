import { Packr } from 'msgpackr';
import type { Redis } from 'ioredis';
import type { StoredConsent, StoredSubscription } from '../../schemas/state.ts';

/** A user's state to store, in the record's parts (engine/infra/scripts/lua/include/user.lua). */
export interface UserRecordParts {
  created_at?: number;
  updated_at?: number;
  tags?: Record<string, string>;
  subs?: StoredSubscription[];
  consent?: Record<string, StoredConsent>;
}

const DEVICE_FIELDS = ['device_model', 'device_os', 'app_version', 'web_auth', 'web_p256'] as const;
const packr = new Packr({ useRecords: false });

/** Writes a user's record straight into Redis, as the apply would have left it. */
export async function writeUserRecord(redis: Pick<Redis, 'set'>, key: string, parts: UserRecordParts): Promise<void> {
  const s = new Map<string, unknown[]>();
  for (const sub of parts.subs ?? []) {
    s.set(`${sub.type}:${sub.token}`, [sub.state === 'retired' ? 1 : 0, sub.created_at, sub.updated_at, sub.registered_at, ...DEVICE_FIELDS.map((f) => sub[f] ?? false)]);
  }
  const o = new Map(Object.entries(parts.consent ?? {}).map(([type, c]) => [type, [c.opted_out, c.at]]));
  const record = new Map<string, unknown>([
    ['t', new Map(Object.entries(parts.tags ?? {}))],
    ['s', s],
    ['o', o],
  ]);
  if (parts.created_at !== undefined) record.set('c', parts.created_at);
  if (parts.updated_at !== undefined) record.set('u', parts.updated_at);
  await redis.set(key, packr.pack(record));
}
