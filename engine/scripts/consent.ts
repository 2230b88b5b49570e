import { defineScript, str } from './contract.ts';

/** engine/lua/writeConsent-2.lua: a user's consent for a type and its `user` change, atomically. */
export const writeConsent = defineScript({
  name: 'writeConsent',
  oom: 'allow', // consent is never lost to overload; it is small
  keys: ['consent', 'changes'],
  args: ['type', 'stored', 'change'],
  reply: { parse: (raw) => ({ id: str('writeConsent', raw) }) },
});
