import { defineScript, flag, str } from './contract.ts';

/** engine/lua/createGroup-1.lua: creates a consumer group (and its stream) unless it exists. */
export const createGroup = defineScript({
  name: 'createGroup',
  oom: 'allow', // a consumer without its group never reads, and reading frees memory
  keys: ['stream'],
  args: ['group', 'from'],
  reply: { parse: (raw) => ({ created: flag('createGroup', raw) }) },
});

/** engine/lua/oldestUnread-1.lua: the oldest entry a group has not acknowledged ("" when none). */
export const oldestUnread = defineScript({
  name: 'oldestUnread',
  oom: 'read',
  keys: ['stream'],
  args: ['group'],
  reply: { parse: (raw) => ({ id: str('oldestUnread', raw) }) },
});
