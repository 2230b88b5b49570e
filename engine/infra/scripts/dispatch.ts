import { defineScript, fields, flag, int, str, strings, type Arg } from './contract.ts';

/** engine/infra/scripts/lua/appendJobs-3.lua: appends one fan-out chunk's jobs of a partition, each user once. */
export const appendJobs = defineScript({
  name: 'appendJobs',
  oom: 'refuse', // new work: the fan-out waits for room
  keys: ['dispatch', 'fanned', 'counts'],
  args: ['notification', 'project', 'keepSeconds', 'jobsField'],
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
  /** JSON of the retry job, or ''. */
  retry: string;
  retryAt: number;
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
  args: ['group', 'now'],
  variadic: {
    name: 'jobs',
    item: ['entryId', 'counters', 'lastAtField', 'retry', 'retryAt', 'outcomes', 'retire'],
    spread: (call: { jobs: readonly JobRecord[] }) => {
      const argv: Arg[] = [];
      for (const j of call.jobs) argv.push(j.entryId, j.counters, j.lastAtField, j.retry, j.retryAt, j.outcomes.join('\n'), j.retire.join('\n'));
      return argv;
    },
  },
  reply: { parse: (raw) => ({ recorded: int('recordAttempts', raw) }) },
});

const recipientFields = ['language', 'subs', 'timezone', 'tags', 'canceled', 'consent'] as const;

/** A dispatch job's user as engine/infra/scripts/lua/include/recipient.lua answers it: tags still encoded. */
export interface Recipient {
  language: string | null;
  subs: string[];
  timezone: string | null;
  /** Every tag, as a field, value list, for a notification with personal texts; else null. */
  tags: string[] | null;
  /** The notification's cancel mark in the user's partition. */
  canceled: boolean;
  /** The stored consent JSON of the channel's types, by type. */
  consent: Record<string, string>;
}

function recipientOf(name: string, raw: unknown): Recipient {
  const r = fields(name, recipientFields, raw);
  const consent: Record<string, string> = {};
  const stored = strings(`${name} consent`, r.consent);
  for (let i = 0; i + 1 < stored.length; i += 2) consent[stored[i] ?? ''] = stored[i + 1] ?? '';
  return {
    language: r.language === null ? null : str(`${name} language`, r.language),
    subs: strings(`${name} subs`, r.subs),
    timezone: r.timezone === null ? null : str(`${name} timezone`, r.timezone),
    tags: r.tags === null ? null : strings(`${name} tags`, r.tags),
    canceled: flag(`${name} canceled`, r.canceled),
    consent,
  };
}

/**
 * engine/infra/scripts/lua/loadRecipient-2.lua: a dispatch job's user: subscriptions of the channel, language and
 * timezone tags, every tag when asked, and the cancel mark and consent a send is checked against.
 */
export const loadRecipient = defineScript({
  name: 'loadRecipient',
  oom: 'read',
  keys: ['user', 'canceled'],
  args: ['types', 'limited', 'allTags'],
  variadic: { name: 'only', spread: (call: { only: readonly string[] }) => [...call.only] },
  reply: { fields: recipientFields, parse: (raw) => recipientOf('loadRecipient', raw) },
});

/** The keys of one user of loadRecipients, all in the partition's slot. */
export interface RecipientKeys {
  user: string;
  canceled: string;
}

/** engine/infra/scripts/lua/loadRecipients-n.lua: loadRecipient for the users of jobs of one partition and notification, in one call. */
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
  args: ['types', 'allTags'],
  reply: {
    parse: (raw) => {
      if (!Array.isArray(raw)) throw new Error(`loadRecipients: expected a list, got ${JSON.stringify(raw)}`);
      return raw.map((r: unknown) => recipientOf('loadRecipients', r));
    },
  },
});

const sendCheckFields = ['canceled', 'consent'] as const;

/** engine/infra/scripts/lua/checkSend-2.lua: the cancel mark and the consent a send is checked against, slot in hand. */
export const checkSend = defineScript({
  name: 'checkSend',
  oom: 'read',
  keys: ['canceled', 'user'],
  args: ['type'],
  reply: {
    fields: sendCheckFields,
    parse: (raw) => {
      const r = fields('checkSend', sendCheckFields, raw);
      return { canceled: flag('checkSend canceled', r.canceled), consent: r.consent === null ? null : str('checkSend consent', r.consent) };
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
