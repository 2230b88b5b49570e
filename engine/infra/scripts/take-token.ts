import { defineScript, int } from './contract.ts';

/** engine/infra/scripts/lua/takeToken-1.lua: takes a token from a key's rate-limit bucket, timed by Redis's clock. */
export const takeToken = defineScript({
  name: 'takeToken',
  oom: 'allow', // a fixed-size bucket per key: the rate limit holds under pressure
  keys: ['bucket'],
  args: ['perSecond', 'burst'],
  /** waitMs: 0 when a token was taken, else the ms until one will be there. */
  reply: { parse: (raw) => ({ waitMs: int('takeToken', raw) }) },
});
