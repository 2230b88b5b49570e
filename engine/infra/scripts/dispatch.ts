import { defineScript, fields, flag, int, str, type Arg } from './contract.ts';

/** engine/infra/scripts/lua/appendJobs-3.lua: appends one fan-out chunk's jobs of a partition, each user once, up to `perJob` users a job. */
export const appendJobs = defineScript({
  name: 'appendJobs',
  oom: 'refuse', // new work: the fan-out waits for room
  keys: ['dispatch', 'fanned', 'counts'],
  args: ['notification', 'project', 'keepSeconds', 'jobsField', 'perJob'],
  variadic: { name: 'users', spread: (call: { users: readonly string[] }) => [...call.users] },
  reply: { parse: (raw) => ({ appended: int('appendJobs', raw) }) },
});

/** One dispatch job's record, as engine/infra/scripts/lua/recordAttempts-5.lua takes it. */
export interface JobRecord {
  /** The job's stream ID. */
  entryId: string;
  /** Counter field -> increment, as JSON (engine/state/notifications/lifecycle.ts settlementOf). */
  counters: string;
  /** The counter set to the record's time, or '' to leave it. */
  lastAtField: string;
  /** The retry jobs that follow, each with when it is due (ms). */
  retries: readonly { job: string; at: number }[];
  /** Outcome JSON (schemas/outcomes.ts), one per attempt. */
  outcomes: readonly string[];
  /** Ingest entry JSON of the dead tokens to retire. */
  retire: readonly string[];
}

/**
 * engine/infra/scripts/lua/recordAttempts-5.lua: acknowledges dispatch jobs of one partition and notification
 * and records their outcomes, each once. JSON never holds a raw newline, so a job's outcomes
 * travel as one newline-joined argument.
 */
export const recordAttempts = defineScript({
  name: 'recordAttempts',
  oom: 'allow', // records sends already made: refused, they would be sent again
  keys: ['dispatch', 'counts', 'outcomes', 'retries', 'ingest'],
  args: ['group', 'now', 'perEntry'],
  variadic: {
    name: 'jobs',
    item: ['entryId', 'counters', 'lastAtField', 'retries', 'outcomes', 'retire'],
    spread: (call: { jobs: readonly JobRecord[] }) => {
      const argv: Arg[] = [];
      for (const j of call.jobs) argv.push(j.entryId, j.counters, j.lastAtField, j.retries.map((r) => `${r.at} ${r.job}`).join('\n'), j.outcomes.join('\n'), j.retire.join('\n'));
      return argv;
    },
  },
  reply: { parse: (raw) => ({ recorded: int('recordAttempts', raw) }) },
});

const recipientFields = ['record', 'canceled'] as const;

/** A dispatch job's user as engine/infra/scripts/lua/include/recipient.lua answers it. */
export interface StoredRecipient {
  /** The user's record as stored (engine/state/users/user-record.ts reads it); null for no user. */
  record: Buffer | null;
  /** The notification's cancel mark in the user's partition. */
  canceled: boolean;
}

function storedRecipientOf(raw: unknown): StoredRecipient {
  const r = fields('loadRecipients', recipientFields, raw);
  if (r.record !== null && !Buffer.isBuffer(r.record)) throw new Error(`loadRecipients: expected the record's bytes, got ${JSON.stringify(r.record)}`);
  return { record: r.record, canceled: flag('loadRecipients canceled', r.canceled) };
}

/** The keys of one user of loadRecipients, all in the partition's slot. */
export interface RecipientKeys {
  user: string;
  canceled: string;
}

/**
 * engine/infra/scripts/lua/loadRecipients-n.lua: for each user of the jobs read together, in one
 * call (one slot), the user's record and the cancel mark a send is checked against.
 */
export const loadRecipients = defineScript({
  name: 'loadRecipients',
  oom: 'read',
  keys: [],
  keyList: {
    name: 'users',
    item: ['user', 'canceled'],
    spread: (call: { users: readonly RecipientKeys[] }) => {
      const keys: string[] = [];
      for (const u of call.users) keys.push(u.user, u.canceled);
      return keys;
    },
  },
  args: [],
  reply: {
    binary: true,
    parse: (raw) => {
      if (!Array.isArray(raw)) throw new Error(`loadRecipients: expected a list, got ${JSON.stringify(raw)}`);
      return raw.map(storedRecipientOf);
    },
  },
});

/** engine/infra/scripts/lua/takeCapSlot-1.lua: takes a slot of a user's frequency cap for a notification, or says it is reached. */
export const takeCapSlot = defineScript({
  name: 'takeCapSlot',
  oom: 'allow', // one small set per capped user; refused, sends already fanned out would wait on memory
  keys: ['sends'],
  args: ['member', 'max', 'windowMs', 'now'],
  reply: { parse: (raw) => ({ taken: flag('takeCapSlot', raw) }) },
});

const releaseFields = ['moved', 'next'] as const;

/** engine/infra/scripts/lua/releaseDue-2.lua: moves due members of a sorted set onto a stream; when the next is due. */
export const releaseDue = defineScript({
  name: 'releaseDue',
  oom: 'refuse', // new work: scheduled notifications wait for room
  keys: ['waiting', 'stream'],
  args: ['now', 'max'],
  reply: {
    fields: releaseFields,
    parse: (raw) => {
      const r = fields('releaseDue', releaseFields, raw);
      const next = str('releaseDue next', r.next);
      return { moved: int('releaseDue moved', r.moved), next: next === '' ? null : Number(next) };
    },
  },
});

/** engine/infra/scripts/lua/offerToken-1.lua: stores a provider token unless another is in force; answers the one in force. */
export const offerToken = defineScript({
  name: 'offerToken',
  oom: 'allow', // one key; dispatch finishes the jobs already fanned out
  keys: ['token'],
  args: ['json', 'replacing', 'ttlMs'],
  reply: { parse: (raw) => ({ json: str('offerToken', raw) }) },
});
