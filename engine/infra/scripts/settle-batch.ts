import { defineScript, fields, flag, int, str } from './contract.ts';

const replyFields = ['pending', 'trimmedTo'] as const;

/** engine/infra/scripts/lua/settleBatch-2.lua: acknowledges a recorded batch, clears its round's mark and trims its stream safely below it. */
export const settleBatch = defineScript({
  name: 'settleBatch',
  oom: 'allow', // acknowledges and trims: frees memory
  keys: ['stream', 'marks'],
  args: ['group', 'lastId', 'kind', 'token'],
  variadic: { name: 'ids', spread: (call: { ids: readonly string[] }) => [...call.ids] },
  reply: {
    fields: replyFields,
    parse: (raw) => {
      const r = fields('settleBatch', replyFields, raw);
      return { pending: int('settleBatch pending', r.pending), trimmedTo: str('settleBatch trimmedTo', r.trimmedTo) };
    },
  },
});

/** engine/infra/scripts/lua/markRound-1.lua: marks a partition's batch as held by a recorder round, where no mark is. */
export const markRound = defineScript({
  name: 'markRound',
  oom: 'allow', // the round's insert and settle trim the streams
  keys: ['marks'],
  args: ['kind', 'token'],
  reply: { parse: (raw) => ({ marked: flag('markRound', raw) }) },
});

/** engine/infra/scripts/lua/settleTapped-1.lua: acknowledges entries the webhooks role has queued events of, and trims their stream safely below them. */
export const settleTapped = defineScript({
  name: 'settleTapped',
  oom: 'allow', // acknowledges and trims: frees memory
  keys: ['stream'],
  args: ['group', 'lastId'],
  variadic: { name: 'ids', spread: (call: { ids: readonly string[] }) => [...call.ids] },
  reply: {
    fields: replyFields,
    parse: (raw) => {
      const r = fields('settleTapped', replyFields, raw);
      return { pending: int('settleTapped pending', r.pending), trimmedTo: str('settleTapped trimmedTo', r.trimmedTo) };
    },
  },
});
