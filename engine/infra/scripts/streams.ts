import { defineScript, flag, strings } from './contract.ts';

/** engine/infra/scripts/lua/createGroup-1.lua: creates a consumer group (and its stream) unless it exists. */
export const createGroup = defineScript({
  name: 'createGroup',
  oom: 'allow', // a consumer without its group never reads, and reading frees memory
  keys: ['stream'],
  args: ['group', 'from'],
  reply: { parse: (raw) => ({ created: flag('createGroup', raw) }) },
});

/** engine/infra/scripts/lua/oldestUnread-n.lua: of each stream, the oldest entry a group has not acknowledged ("" when none). */
export const oldestUnread = defineScript({
  name: 'oldestUnread',
  oom: 'read',
  keys: [],
  keyList: { name: 'streams', item: ['stream'], spread: (call: { streams: readonly string[] }) => [...call.streams] },
  args: ['group'],
  reply: { parse: (raw) => ({ ids: strings('oldestUnread', raw) }) },
});

/** engine/infra/scripts/lua/queueEvents-1.lua: appends events (body, order key) to a webhook endpoint's queue. */
export const queueEvents = defineScript({
  name: 'queueEvents',
  oom: 'allow', // the webhooks tap must read on at maxmemory, or no stream is trimmed
  keys: ['queue'],
  args: [],
  variadic: { name: 'events', item: ['body', 'key'], spread: (call: { events: readonly { body: string; key: string }[] }) => call.events.flatMap((e) => [e.body, e.key]) },
  reply: { parse: (raw) => ({ appended: Number(raw) }) },
});
