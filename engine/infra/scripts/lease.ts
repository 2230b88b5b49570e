import { defineScript, flag } from './contract.ts';

/** engine/infra/scripts/lua/renewLeases-n.lua: extends leases, each only while this worker owns it. */
export const renewLeases = defineScript({
  name: 'renewLeases',
  oom: 'allow', // keeps the owners that free memory
  keys: [],
  keyList: { name: 'leases', item: ['lease'], spread: (call: { leases: readonly string[] }) => [...call.leases] },
  args: ['worker', 'leaseMs'],
  reply: {
    parse: (raw) => {
      if (!Array.isArray(raw)) throw new Error(`renewLeases: expected a list, got ${JSON.stringify(raw)}`);
      return raw.map((r: unknown) => flag('renewLeases', r));
    },
  },
});

/** engine/infra/scripts/lua/releaseLease-1.lua: deletes a lease only while this worker owns it. */
export const releaseLease = defineScript({
  name: 'releaseLease',
  oom: 'allow', // frees memory
  keys: ['lease'],
  args: ['worker'],
  reply: { parse: (raw) => ({ released: flag('releaseLease', raw) }) },
});

/** engine/infra/scripts/lua/heartbeat-1.lua: one heartbeat into a role's worker set; returns the live workers. */
export const heartbeat = defineScript({
  name: 'heartbeat',
  oom: 'allow', // the lease round comes before every apply, settle and trim
  keys: ['workers'],
  args: ['worker', 'now', 'expiresAt'],
  reply: {
    parse: (raw) => {
      if (!Array.isArray(raw) || !raw.every((w) => typeof w === 'string')) throw new Error(`heartbeat: expected worker ids, got ${JSON.stringify(raw)}`);
      return { live: raw };
    },
  },
});

/** engine/infra/scripts/lua/setIfAbsent-1.lua: SET NX PX (a lease taken, a recorder round's manifest). */
export const setIfAbsent = defineScript({
  name: 'setIfAbsent',
  oom: 'allow', // taking a lease and starting a recorder round come before what frees memory
  keys: ['key'],
  args: ['value', 'ttlMs'],
  reply: { parse: (raw) => ({ set: flag('setIfAbsent', raw) }) },
});
