import { defineScript, int, str } from './contract.ts';

/** engine/infra/scripts/lua/writeConsent-2.lua: a user's consent for a type and its `user` change, atomically. */
export const writeConsent = defineScript({
  name: 'writeConsent',
  oom: 'allow', // consent is never lost to overload; it is small
  keys: ['user', 'changes'],
  args: ['type', 'optedOut', 'at', 'change'],
  reply: { parse: (raw) => ({ id: str('writeConsent', raw) }) },
});

/** engine/infra/scripts/lua/upgradeUser-1.lua: folds a user's hashes of 0.11.1 into their record, ahead of their next write. */
export const upgradeUser = defineScript({
  name: 'upgradeUser',
  oom: 'allow', // it frees more than it writes
  keys: ['user'],
  args: [],
  reply: { parse: (raw) => ({ folded: int('upgradeUser', raw) === 1 }) },
});
