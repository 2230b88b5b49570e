import { Ajv } from 'ajv';
import { Change, type EventChange, type ReceiptChange } from '../../schemas/changes.ts';
import { OutcomeEntry } from '../../schemas/outcomes.ts';
import type { Static } from 'typebox';
import type { UserView } from '../../schemas/users.ts';
import { fieldOf, type StreamEntry } from '../../engine/runner/types.ts';

// Compiled once per process (STYLE.md 6).
const ajv = new Ajv();
const isChange = ajv.compile<Change>(Change);
const isOutcome = ajv.compile<OutcomeEntry>(OutcomeEntry);

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

export const parseChange = (entry: StreamEntry): Change | null => parsed(fieldOf(entry, 'd'), isChange);

/**
 * The message_deliveries row (migration 0002) of an outcome entry as JSON text, or null when the
 * entry is not a valid OutcomeEntry. A valid entry's fields are exactly the table's columns but
 * `stream_id`, so its own JSON is the row once `stream_id` (a stream ID: digits and a dash, no
 * escaping needed) is put in front.
 */
export function deliveryLine(entry: StreamEntry): string | null {
  const json = fieldOf(entry, 'd');
  if (json === undefined || parsed(json, isOutcome) === null) return null;
  return `{"stream_id":"${entry.id}",${json.trimStart().slice(1)}`;
}

/** An events row (migration 0004). */
export function eventRow(c: Static<typeof EventChange>): Record<string, unknown> {
  return {
    project: c.project,
    external_id: c.external_id,
    name: c.name,
    properties: JSON.stringify(c.properties ?? {}),
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
 * A `users` mirror row (migration 0005) of a user's state: every tag as text in `tags`, number
 * tags also in `tag_numbers` (filters compare those as numbers), the types of the live
 * subscriptions, and the types opted out of.
 */
export function userRow(project: string, user: UserView, streamId: string): Record<string, unknown> {
  // No prototype: a tag may be named "__proto__".
  const tags = Object.create(null) as Record<string, string>;
  const numbers = Object.create(null) as Record<string, number>;
  for (const [key, value] of Object.entries(user.tags)) {
    tags[key] = String(value);
    if (typeof value === 'number') numbers[key] = value;
  }
  const live = new Set(user.subscriptions.filter((s) => s.state === 'live').map((s) => s.type));
  const optedOut = Object.entries(user.consent)
    .filter(([, c]) => c.opted_out)
    .map(([type]) => type);
  return {
    project,
    external_id: user.external_id,
    tags,
    tag_numbers: numbers,
    subscription_types: [...live].sort(),
    opted_out: optedOut.sort(),
    created_at: Date.parse(user.created_at),
    updated_at: Date.parse(user.updated_at),
    version: versionOf(streamId),
    stream_id: streamId,
  };
}
