/**
 * What bench/memory.ts reads of a Redis server, never by key name (the layout may change under
 * it): used_memory less the clients' buffers and the consumed logs, the keys (DBSIZE), and the
 * bytes by key type (MEMORY USAGE of every key); read once every consumer group of every stream
 * has caught up and the figures are still.
 */
import type { Redis } from 'ioredis';
import { sleep } from './deployment.ts';

/** Where the used_memory of a stage went: keys and MEMORY USAGE bytes by type. */
export interface Snapshot {
  used_memory: number;
  keys: number;
  by_type: Record<string, { keys: number; bytes: number }>;
  /** used_memory without the consumed logs and the clients' buffers: what the per-unit figures are read from. */
  state_memory: number;
  /** The clients' query and output buffers (mem_clients_normal and mem_clients_slaves): they come and go with the traffic. */
  clients: number;
  /**
   * Streams every consumer group of which has read and acknowledged everything: entries waiting
   * for a trim (the apply trims an ingest stream only past 512 entries), not state; `bytes` is
   * what used_memory drops by when they are deleted.
   */
  consumed_logs: { streams: number; entries: number; bytes: number };
}

function fieldsOf(reply: unknown): Map<string, unknown> {
  const list = Array.isArray(reply) ? (reply as unknown[]) : [];
  const out = new Map<string, unknown>();
  for (let i = 0; i + 1 < list.length; i += 2) out.set(String(list[i]), list[i + 1]);
  return out;
}

async function scanAll(redis: Redis, type?: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = type === undefined ? await redis.scan(cursor, 'COUNT', 5000) : await redis.scan(cursor, 'COUNT', 5000, 'TYPE', type);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

interface StreamState {
  key: string;
  groups: number;
  entries: number;
  /** Entries some group has not read yet or not acknowledged, summed over its groups. */
  outstanding: number;
  /** For an error message: each group with entries outstanding. */
  where: string[];
}

/**
 * Every stream and how far its consumer groups are; a group whose lag Redis cannot tell counts 1
 * until it has read up to the last entry.
 */
async function streams(redis: Redis): Promise<StreamState[]> {
  const out: StreamState[] = [];
  for (const key of await scanAll(redis, 'stream')) {
    const info = fieldsOf(await redis.xinfo('STREAM', key));
    const last = String(info.get('last-generated-id'));
    const state: StreamState = { key, groups: 0, entries: Number(info.get('length') ?? 0), outstanding: 0, where: [] };
    for (const raw of (await redis.xinfo('GROUPS', key)) as unknown[]) {
      const g = fieldsOf(raw);
      const lag = g.get('lag');
      // A group moved past the end (XGROUP SETID to a time, as the webhooks tap does) has no lag.
      const unread = typeof lag === 'number' ? lag : idBelow(String(g.get('last-delivered-id')), last) ? 1 : 0;
      const pending = Number(g.get('pending') ?? 0);
      state.groups += 1;
      state.outstanding += unread + pending;
      if (unread + pending > 0) state.where.push(`${key} ${String(g.get('name'))}: ${unread} unread, ${pending} pending`);
    }
    out.push(state);
  }
  return out;
}

export async function outstanding(redis: Redis): Promise<{ total: number; where: string[] }> {
  const all = await streams(redis);
  return { total: all.reduce((sum, s) => sum + s.outstanding, 0), where: all.flatMap((s) => s.where) };
}

/**
 * Reads used_memory and the clients' buffers, deletes every consumed log (KEYS: the streams),
 * reads used_memory again and restores them as they were, in one script so no client sees them
 * gone. MEMORY USAGE misjudges a stream by 5 to 15%, more than some whole stages weigh. Answers
 * the two readings, the entries deleted, the names of the consumed logs and the clients' bytes.
 */
const WITHOUT_LOGS = `
local function fields(a) local t = {} for i = 1, #a, 2 do t[a[i]] = a[i + 1] end return t end
local function below(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
local function used() return tonumber(string.match(redis.call('INFO', 'memory'), 'used_memory:(%d+)')) end
local info = redis.call('INFO', 'memory')
local before = tonumber(string.match(info, 'used_memory:(%d+)'))
local clients = tonumber(string.match(info, 'mem_clients_normal:(%d+)')) + tonumber(string.match(info, 'mem_clients_slaves:(%d+)'))
local names, dumps, entries = {}, {}, 0
for _, key in ipairs(KEYS) do
  if redis.call('TYPE', key).ok == 'stream' then
    local groups = redis.call('XINFO', 'GROUPS', key)
    local stream = fields(redis.call('XINFO', 'STREAM', key))
    local consumed = #groups > 0
    for _, raw in ipairs(groups) do
      local g = fields(raw)
      if g['pending'] > 0 then consumed = false
      elseif g['lag'] then consumed = consumed and g['lag'] == 0
      elseif below(g['last-delivered-id'], stream['last-generated-id']) then consumed = false end
    end
    if consumed then
      names[#names + 1] = key
      dumps[#dumps + 1] = redis.call('DUMP', key)
      entries = entries + stream['length']
    end
  end
end
for _, key in ipairs(names) do redis.call('DEL', key) end
local without = used()
for i, key in ipairs(names) do redis.call('RESTORE', key, 0, dumps[i]) end
return {before, without, entries, names, clients}
`;

async function withoutLogs(redis: Redis): Promise<{ used: number; without: number; entries: number; names: string[]; clients: number }> {
  const keys = await scanAll(redis, 'stream');
  const [used, without, entries, names, clients] = (await redis.eval(WITHOUT_LOGS, keys.length, ...keys)) as [number, number, number, string[], number];
  return { used, without, entries, names, clients };
}

function idBelow(a: string, b: string): boolean {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  return am < bm || (am === bm && as < bs);
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? 0);
}

/**
 * Waits until `done` holds and DBSIZE and used_memory (to 0.1%: clients' buffers move a little)
 * are the same over three polls a second apart; then reads the figures three times.
 */
export async function settle(redis: Redis, what: string, done: () => Promise<boolean>, ms = 300_000): Promise<Snapshot> {
  const deadline = Date.now() + ms;
  let still = 0;
  let previous = { keys: -1, memory: -1 };
  for (;;) {
    if (Date.now() > deadline) {
      const left = await outstanding(redis);
      throw new Error(`timed out waiting for ${what} to settle: ${left.where.slice(0, 5).join('; ') || `nothing outstanding; keys ${previous.keys}, used_memory ${previous.memory}`}`);
    }
    if (!(await done())) {
      still = 0;
      await sleep(250);
      continue;
    }
    const now = { keys: await redis.dbsize(), memory: await usedMemory(redis) };
    still = now.keys === previous.keys && Math.abs(now.memory - previous.memory) <= previous.memory * 0.001 ? still + 1 : 0;
    previous = now;
    if (still >= 2) break;
    await sleep(1000);
  }
  // The median of three readings of each figure. The first restore leaves the logs a little
  // smaller than the engine grew them, which moves used_memory, not the state.
  const reads: Awaited<ReturnType<typeof withoutLogs>>[] = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(300);
    reads.push(await withoutLogs(redis));
  }
  const median = (pick: (r: (typeof reads)[number]) => number): number => reads.map(pick).sort((a, b) => a - b)[1] ?? 0;
  const last = reads[reads.length - 1] ?? { used: 0, without: 0, entries: 0, names: [], clients: 0 };
  const used = median((r) => r.used);
  const clients = median((r) => r.clients);
  const state = median((r) => r.without - r.clients);
  return {
    used_memory: used,
    state_memory: state,
    clients,
    keys: await redis.dbsize(),
    by_type: await byType(redis, new Set(last.names)),
    consumed_logs: { streams: last.names.length, entries: last.entries, bytes: median((r) => r.used - r.without) },
  };
}

/** MEMORY USAGE (every sample) of every key but the consumed logs, summed by TYPE; read after used_memory. */
async function byType(redis: Redis, logs: Set<string>): Promise<Snapshot['by_type']> {
  const out: Snapshot['by_type'] = {};
  const keys = (await scanAll(redis)).filter((key) => !logs.has(key));
  for (let i = 0; i < keys.length; i += 2000) {
    const pipeline = redis.pipeline();
    const chunk = keys.slice(i, i + 2000);
    for (const key of chunk) pipeline.type(key).memory('USAGE', key, 'SAMPLES', 0);
    const replies = (await pipeline.exec()) ?? [];
    for (let k = 0; k < chunk.length; k++) {
      const type = String(replies[2 * k]?.[1] ?? 'none');
      if (type === 'none') continue; // expired or deleted between SCAN and TYPE
      const entry = (out[type] ??= { keys: 0, bytes: 0 });
      entry.keys += 1;
      entry.bytes += Number(replies[2 * k + 1]?.[1] ?? 0);
    }
  }
  return out;
}
