import { defineScript, fields, int, str, strings } from './contract.ts';

/** Return codes of applyBatch (the reply's `code`). */
export enum ApplyCode {
  /** Applied; entries at or below the last applied ID were skipped. */
  Ok = 0,
  /** The partition's lease names another worker (or none): nothing was written. */
  NotOwner = 1,
  /** The batch does not continue the stream right after the last applied ID: nothing was written. */
  Gap = 2,
}

/** A stream entry as the apply passes it: its stream ID and its JSON (field d); an ingest entry in, an outbox entry out. */
export interface ApplyEntry {
  id: string;
  json: string;
}

/** One partition's keys and entries in a call; what it reads besides goes in the `batches` argument. */
export interface PartitionBatch {
  keys: { lease: string; applied: string; ingest: string; changes: string; outbox: string };
  entries: readonly ApplyEntry[];
}

/** One partition's result, in the order of the call's batches. */
export interface ApplyReply {
  code: ApplyCode;
  applied: number;
  invalid: number;
  appliedId: string;
  outbox: number;
  pending: number;
  /** The outbox's entries, all appended by this call; empty when `outbox` is the length read. */
  registrations: ApplyEntry[];
}

const replyFields = ['code', 'applied', 'invalid', 'appliedId', 'outbox', 'pending', 'registrations'] as const;

function entriesOf(raw: unknown): ApplyEntry[] {
  const flat = strings('applyBatch registrations', raw);
  const out: ApplyEntry[] = [];
  for (let i = 0; i < flat.length; i += 2) out.push({ id: str('applyBatch registration id', flat[i]), json: str('applyBatch registration', flat[i + 1]) });
  return out;
}

function applyCode(value: unknown): ApplyCode {
  const code = int('applyBatch code', value);
  if (!(code in ApplyCode)) throw new Error(`applyBatch returned unknown code ${code}`);
  return code as ApplyCode;
}

function replyOf(raw: unknown[]): ApplyReply {
  const r = fields('applyBatch', replyFields, raw);
  return {
    code: applyCode(r.code),
    applied: int('applyBatch applied', r.applied),
    invalid: int('applyBatch invalid', r.invalid),
    appliedId: str('applyBatch appliedId', r.appliedId),
    outbox: int('applyBatch outbox', r.outbox),
    pending: int('applyBatch pending', r.pending),
    registrations: entriesOf(r.registrations),
  };
}

/** engine/infra/scripts/lua/applyBatch-n.lua: applies a batch of ingest entries for each of several partitions, each fenced and deduplicated. */
export const applyBatch = defineScript({
  name: 'applyBatch',
  oom: 'allow', // the only way accepted writes leave the ingest log
  keys: [],
  keyList: {
    name: 'partitions',
    item: ['lease', 'applied', 'ingest', 'changes', 'outbox'],
    spread: (call: { batches: readonly PartitionBatch[] }) => call.batches.flatMap(({ keys: k }) => [k.lease, k.applied, k.ingest, k.changes, k.outbox]),
  },
  args: ['worker', 'subscriptionTypes', 'receiptKinds', 'group', 'idempotencyMs', 'maxTags', 'maxSubscriptions', 'windowMs', 'batches'],
  variadic: {
    name: 'entries',
    item: ['id', 'json'],
    spread: (call: { batches: readonly PartitionBatch[] }) => {
      const out: string[] = [];
      for (const batch of call.batches) for (const e of batch.entries) out.push(e.id, e.json);
      return out;
    },
  },
  reply: {
    // The fields of each partition's part of the list.
    fields: replyFields,
    parse: (raw): ApplyReply[] => {
      if (!Array.isArray(raw) || raw.length % replyFields.length !== 0) throw new Error(`applyBatch: expected a list of replies, got ${JSON.stringify(raw)}`);
      const out: ApplyReply[] = [];
      for (let i = 0; i < raw.length; i += replyFields.length) out.push(replyOf(raw.slice(i, i + replyFields.length)));
      return out;
    },
  },
});
