import { defineScript, fields, int, str } from './contract.ts';

/** Return codes of applyBatch (the reply's `code`). */
export enum ApplyCode {
  /** Applied; entries at or below the last applied ID were skipped. */
  Ok = 0,
  /** The partition's lease names another worker (or none): nothing was written. */
  NotOwner = 1,
  /** The batch does not continue the stream right after the last applied ID: nothing was written. */
  Gap = 2,
}

/** One ingest entry of a batch: its stream ID and its JSON (field d). */
export interface ApplyEntry {
  id: string;
  json: string;
}

const replyFields = ['code', 'applied', 'invalid', 'appliedId', 'outbox', 'pending'] as const;

function applyCode(value: unknown): ApplyCode {
  const code = int('applyBatch code', value);
  if (!(code in ApplyCode)) throw new Error(`applyBatch returned unknown code ${code}`);
  return code as ApplyCode;
}

/** engine/infra/scripts/lua/applyBatch-5.lua: applies a batch of one partition's ingest entries, fenced and deduplicated. */
export const applyBatch = defineScript({
  name: 'applyBatch',
  oom: 'allow', // the only way accepted writes leave the ingest log
  keys: ['lease', 'applied', 'ingest', 'changes', 'outbox'],
  args: ['worker', 'keyPrefixes', 'subscriptionTypes', 'receiptKinds', 'group', 'idempotencyMs', 'maxTags', 'maxSubscriptions', 'windowMs', 'readOutbox', 'mayTrim'],
  variadic: {
    name: 'entries',
    item: ['id', 'json'],
    spread: (call: { entries: readonly ApplyEntry[] }) => call.entries.flatMap((e) => [e.id, e.json]),
  },
  reply: {
    fields: replyFields,
    parse: (raw) => {
      const r = fields('applyBatch', replyFields, raw);
      return {
        code: applyCode(r.code),
        applied: int('applyBatch applied', r.applied),
        invalid: int('applyBatch invalid', r.invalid),
        appliedId: str('applyBatch appliedId', r.appliedId),
        outbox: int('applyBatch outbox', r.outbox),
        pending: int('applyBatch pending', r.pending),
      };
    },
  },
});
