import { defineScript, fields, int, str } from './contract.ts';

const replyFields = ['pending', 'trimmedTo'] as const;

/** engine/lua/settleBatch-2.lua: acknowledges a recorded batch, clears its round's mark and trims its stream safely below it. */
export const settleBatch = defineScript({
  name: 'settleBatch',
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
