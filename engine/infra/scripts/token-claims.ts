import { defineScript, flag, str } from './contract.ts';

/** A detach owed on a token: drop it from this user if registered at or before `registeredAt`. */
export interface OwedDetach {
  externalId: string;
  /** ms, as the record holds it (clearDetach clears only this exact value). */
  registeredAt: string;
}

function owedDetaches(raw: unknown): OwedDetach[] {
  if (!Array.isArray(raw) || raw.length % 2 !== 0) throw new Error(`claimToken: expected pairs, got ${JSON.stringify(raw)}`);
  const owed: OwedDetach[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    owed.push({ externalId: str('claimToken externalId', raw[i]), registeredAt: str('claimToken registeredAt', raw[i + 1]) });
  }
  return owed;
}

/** engine/infra/scripts/lua/claimToken-2.lua: records a registration of a token (newest wins); returns the detaches owed. */
export const claimToken = defineScript({
  name: 'claimToken',
  oom: 'allow', // settles an apply already made (the outbox)
  keys: ['index', 'owed'],
  args: ['id', 'externalId', 'registeredAt'],
  variadic: {
    name: 'owed',
    item: ['externalId', 'registeredAt'],
    spread: (call: { owed: readonly OwedDetach[] }) => call.owed.flatMap((d) => [d.externalId, d.registeredAt]),
  },
  reply: { parse: (raw) => ({ owed: owedDetaches(raw) }) },
});

/** engine/infra/scripts/lua/clearDetach-1.lua: forgets an owed detach once sent, if it still has the value sent. */
export const clearDetach = defineScript({
  name: 'clearDetach',
  oom: 'allow', // settles an apply already made (the outbox)
  keys: ['owed'],
  args: ['externalId', 'registeredAt'],
  reply: { parse: (raw) => ({ cleared: flag('clearDetach', raw) }) },
});

/** engine/infra/scripts/lua/tokenOwner-1.lua: the token index's entry of a subscription id, `<registered_at>[c]:<owner>`. */
export const tokenOwner = defineScript({
  name: 'tokenOwner',
  oom: 'read',
  keys: ['index'],
  args: ['id'],
  reply: { parse: (raw) => ({ entry: raw === null ? null : str('tokenOwner', raw) }) },
});

/** engine/infra/scripts/lua/appendDetach-1.lua: appends an owed detach to the losing user's ingest stream. */
export const appendDetach = defineScript({
  name: 'appendDetach',
  oom: 'allow', // part of an apply already made
  keys: ['ingest'],
  args: ['entry'],
  reply: { parse: (raw) => ({ id: str('appendDetach', raw) }) },
});
