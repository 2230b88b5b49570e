import { defineScript, flag } from './contract.ts';

/** engine/lua/renewLease-1.lua: extends a lease only while this worker owns it. */
export const renewLease = defineScript({
  name: 'renewLease',
  keys: ['lease'],
  args: ['worker', 'leaseMs'],
  reply: { parse: (raw) => ({ renewed: flag('renewLease', raw) }) },
});

/** engine/lua/releaseLease-1.lua: deletes a lease only while this worker owns it. */
export const releaseLease = defineScript({
  name: 'releaseLease',
  keys: ['lease'],
  args: ['worker'],
  reply: { parse: (raw) => ({ released: flag('releaseLease', raw) }) },
});
