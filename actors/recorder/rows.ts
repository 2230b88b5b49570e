import { Change, type EventChange, type ReceiptChange } from '../../schemas/changes.ts';
import { OutcomeEntry, outcomeParts } from '../../schemas/outcomes.ts';
import type { Static } from 'typebox';
import { parseConsent } from '../../engine/state/users/consent.ts';
import { parseSubscription, type UserHashes } from '../../engine/state/users/read-user.ts';
import { decodeTag } from '../../engine/state/users/tag-codec.ts';
import type { UserSummary } from '../../engine/state/users/user-record.ts';
import { compileFirst } from '../../engine/infra/validation/validator.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';

// Compiled once per process (docs/architecture.md#validators-compiled-once).
const isChange = compileFirst<Change>(Change);
const isOutcome = compileFirst<OutcomeEntry>(OutcomeEntry);

/** JSON text (a stream entry's field `d`) when it matches `check`, else null (counted as invalid). */
function parsed<T>(json: string | undefined, check: (v: unknown) => v is T): T | null {
  if (json === undefined) return null;
  try {
    const value: unknown = JSON.parse(json);
    return check(value) ? value : null;
  } catch {
    return null;
  }
}

/** A change entry's JSON (its field `d`), checked; null when it is not a change. */
export const parseChange = (entry: RawStreamEntry): Change | null => parsed(dataOf(entry)?.toString('utf8'), isChange);

const D = 0x64;
const R = 0x72;
const OPEN_BRACE = 0x7b;
const NEWLINE = 0x0a;
/** The row start that the recorder puts in front of each outcome's own fields. */
const STREAM_ID_OPEN = Buffer.from('{"stream_id":"');
const STREAM_ID_CLOSE = Buffer.from('",');

/** The value of an entry's field `d` (the JSON text every stream entry of ours carries). */
function dataOf(entry: RawStreamEntry): Buffer | undefined {
  const { fields } = entry;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i] as Buffer;
    if (name.length === 1 && name[0] === D) return fields[i + 1];
  }
  return undefined;
}

/** The values of an entry's fields `r`, in order: a `users` change's records, one a user (schemas/changes.ts). */
export function recordsOf(entry: RawStreamEntry): Buffer[] {
  const out: Buffer[] = [];
  const { fields } = entry;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i] as Buffer;
    if (name.length === 1 && name[0] === R) out.push(fields[i + 1] as Buffer);
  }
  return out;
}

/**
 * The message_deliveries_in rows (migration 0007) of outcome entries as JSONEachRow text, and how
 * many, without parsing them: each outcome's own JSON object (an entry holds one a line) with its
 * entry's `stream_id` put in front (`{"stream_id":"<id>",` replaces its `{`; a stream ID is digits
 * and a dash, so it needs no escaping), written into one buffer. Null when an outcome is not an
 * object text to splice so (no `d`, or a line not starting with `{`). ClickHouse checks the rows
 * as it parses them (column types, unknown fields, the table's constraints); when it refuses the
 * batch, checkedDeliveryLines finds the bad outcomes. The recorder's hot path: byte copies only.
 */
export function deliveryLines(entries: readonly RawStreamEntry[]): { lines: Buffer; rows: number } | null {
  const values: Buffer[][] = [];
  let size = 0;
  let rows = 0;
  for (const entry of entries) {
    const value = dataOf(entry);
    if (value === undefined) return null;
    const lines = outcomeBytes(value);
    for (const line of lines) {
      if (line[0] !== OPEN_BRACE) return null;
      size += STREAM_ID_OPEN.length + entry.id.length + STREAM_ID_CLOSE.length + line.length;
    }
    rows += lines.length;
    values.push(lines);
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  entries.forEach((entry, i) => {
    const { id } = entry;
    for (const line of values[i] as Buffer[]) {
      out.set(STREAM_ID_OPEN, at);
      at += STREAM_ID_OPEN.length;
      for (let c = 0; c < id.length; c++) out[at++] = id.charCodeAt(c);
      out.set(STREAM_ID_CLOSE, at);
      at += STREAM_ID_CLOSE.length;
      out.set(line.subarray(1), at);
      at += line.length - 1;
      out[at++] = NEWLINE;
    }
  });
  return { lines: out, rows };
}

/**
 * The message_deliveries_in rows of the outcomes that are valid OutcomeEntry JSON, each checked
 * and written anew, and how many outcomes were not (an entry without `d` counts one): the slow
 * path, taken only when ClickHouse refused a batch of deliveryLines.
 */
export function checkedDeliveryLines(entries: readonly RawStreamEntry[]): { lines: Buffer; rows: number; invalid: number } {
  const lines: string[] = [];
  let invalid = 0;
  for (const entry of entries) {
    const value = dataOf(entry);
    for (const text of value === undefined ? [''] : outcomeBytes(value).map((line) => line.toString('utf8'))) {
      const outcome = parsed(text, isOutcome);
      if (outcome === null) invalid += 1;
      else lines.push(JSON.stringify({ stream_id: entry.id, ...outcome }));
    }
  }
  return { lines: Buffer.from(lines.join('\n')), rows: lines.length, invalid };
}

/** The bytes of each outcome of one entry's value (schemas/outcomes.ts). */
function outcomeBytes(value: Buffer): Buffer[] {
  return outcomeParts(value, (from, to) => value.subarray(from, to));
}

/** An events row (migration 0004). */
export function eventRow(c: Static<typeof EventChange>): Record<string, unknown> {
  return {
    project: c.project,
    external_id: c.external_id,
    name: c.name,
    // Keys in order, as one text whatever order the SDK sent them in (the values are flat).
    properties: JSON.stringify(c.properties ?? {}, Object.keys(c.properties ?? {}).sort()),
    idempotency_key: c.idempotency_key ?? null,
    stream_id: c.id,
    at: c.ts,
  };
}

/** A receipts row (migration 0003). */
export function receiptRow(c: Static<typeof ReceiptChange>): Record<string, unknown> {
  return { project: c.project, svc_message_id: c.svc_message_id, external_id: c.external_id, receipt: c.receipt, stream_id: c.id, at: c.ts };
}

/**
 * The `users` mirror version of a change stream ID `ms-seq`: ms * 10^6 + seq, as decimal text
 * (UInt64; past 2^53, so never a JavaScript number). IDs of one stream rise, and so do versions.
 */
export function versionOf(streamId: string): string {
  const [ms = '0', seq = '0'] = streamId.split('-');
  return (BigInt(ms) * 1_000_000n + BigInt(seq)).toString();
}

/**
 * A user's summary from its four hashes as stored (an earlier release's `user` change, or a
 * user read from Redis): null when the user hash is empty (no such user); a time that is not a
 * number reads as 0.
 */
export function summaryOfHashes(hashes: UserHashes): UserSummary | null {
  const created = hashes.user['created_at'];
  if (created === undefined) return null;
  const live = new Set<string>();
  for (const json of Object.values(hashes.subs)) {
    const sub = parseSubscription(json);
    if (sub?.state === 'live') live.add(sub.type);
  }
  const optedOut = Object.entries(parseConsent(hashes.consent))
    .filter(([, c]) => c.opted_out)
    .map(([type]) => type);
  return { createdAt: msOf(created), updatedAt: msOf(hashes.user['updated_at'] ?? created), tags: new Map(Object.entries(hashes.tags)), live, optedOut };
}

/**
 * A `users` mirror row (migration 0005) of a user's summary: every tag as text in `tags`,
 * number tags also in `tag_numbers` (filters compare those as numbers), the types of the live
 * subscriptions, and the types opted out of. Null for no user. Built from the summary directly,
 * not through the API's user view: this runs for most SDK writes.
 */
export function userRow(project: string, externalId: string, user: UserSummary | null, streamId: string): Record<string, unknown> | null {
  if (user === null) return null;
  // No prototype: a tag may be named "__proto__".
  const tags = Object.create(null) as Record<string, string>;
  const numbers = Object.create(null) as Record<string, number>;
  for (const [key, stored] of user.tags) {
    if (stored === '') continue;
    const value = decodeTag(stored);
    tags[key] = String(value);
    if (typeof value === 'number') numbers[key] = value;
  }
  return {
    project,
    external_id: externalId,
    tags,
    tag_numbers: numbers,
    subscription_types: [...user.live].sort(),
    opted_out: [...user.optedOut].sort(),
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    version: versionOf(streamId),
    stream_id: streamId,
  };
}

/** A stored time (ms since the epoch, as decimal text) as a whole number of ms; 0 when unreadable. */
function msOf(text: string): number {
  const n = Number(text);
  return Number.isFinite(n) ? Math.trunc(n) : 0;
}
