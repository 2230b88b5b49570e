/**
 * Memory benchmark: what Redis keeps per unit of state once every write is applied and recorded,
 * read from `INFO memory` (used_memory) as deltas between stages of one run, less two things that
 * are not state: the clients' buffers and the consumed logs (streams all of whose consumer groups
 * have read and acknowledged everything, whose entries wait for a trim). The keys (DBSIZE) and
 * the bytes by key type (MEMORY USAGE of every key) are the breakdown. Key names are never read:
 * the layout may change under it.
 *
 * Each tree runs on a redis-server of its own (free port, `--save "" --appendonly no`), with one
 * `engine start` process (every role, embedded ClickHouse) from the tree's sources. Stages, each
 * measured against the one before it:
 * 1. the empty engine (project created, started, settled);
 * 2. BENCH_USERS users, each identified with 5 tags and one IOS_PUSH subscription (SDK batches);
 * 3. 5 more tags for each of them; 4. a second IOS_PUSH subscription for each;
 * 5. BENCH_EVENTS events, each with a distinct idempotency_key (a UUID);
 * 6. BENCH_WEBHOOK_EVENTS `delivery.skipped` events queued for a webhook endpoint on a closed port
 *    (a notification to as many ids without a subscription);
 * 7. a notification in flight to BENCH_RECIPIENTS users (one IOS_PUSH subscription each, written
 *    first and measured apart) whose APNs endpoint, an HTTP/2 server of this process, never answers.
 * "Settled" means: every consumer group of every stream has read all of it and has nothing
 * pending (apply, recorder, webhooks, fan-out, dispatch), and DBSIZE and used_memory are still;
 * for the notification in flight, that it is `sending` and nothing moves.
 *
 * Baseline in the same run: the same workload against the last release (BENCH_BASELINE_COMMIT,
 * default 6027315, 0.11.1) in a git worktree under the temp dir, removed at the end;
 * BENCH_BASELINE_COMMIT=none skips it.
 * Goals: a user with 5 tags and one push subscription at most 600 bytes; an idempotent event at most 40.
 *
 * `node --import tsx bench/memory.ts` (or `npm run bench -- memory`). Environment: BENCH_USERS
 * (default 20000), BENCH_EVENTS (100000), BENCH_WEBHOOK_EVENTS (20000), BENCH_RECIPIENTS (10000;
 * 0 skips the stage, as BENCH_WEBHOOK_EVENTS=0 does), BENCH_BASELINE_COMMIT, REDIS_SERVER
 * (the redis-server binary). Writes bench/reports/memory.json.
 *
 * What it reads of Redis is in bench/memory-snapshot.ts, what it writes in bench/memory-workload.ts.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startChild, type Child } from './child.ts';
import { engineNodeFlags } from './engine-build.ts';
import { call } from './deployment.ts';
import { outstanding, settle, type Snapshot } from './memory-snapshot.ts';
import { apnsCredentials, BATCH, extraTags, firstTags, IN_FLIGHT, iosToken, notify, recipientId, sendOps, silentApns, subscribe, userId } from './memory-workload.ts';
import { root } from './paths.ts';
import { freePort, startRedisServer } from './redis-server.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { positive } from './settings.ts';
import type { SummaryRow } from './summary.ts';
import { machine, printRows, round } from './table.ts';

const run = promisify(execFile);
const settings = {
  users: positive('BENCH_USERS', 20_000),
  events: positive('BENCH_EVENTS', 100_000),
  webhook_events: positive('BENCH_WEBHOOK_EVENTS', 20_000, true),
  recipients: positive('BENCH_RECIPIENTS', 10_000, true),
  tags_per_user: 5,
  extra_tags_per_user: 5,
};
const BASELINE_COMMIT = process.env['BENCH_BASELINE_COMMIT'] ?? '6027315';
const BASELINE_NAME = BASELINE_COMMIT === '6027315' ? '0.11.1' : BASELINE_COMMIT;
const GOAL_USER_BYTES = 600;
const GOAL_EVENT_BYTES = 40;

const work = mkdtempSync(join(tmpdir(), 'bench-memory-'));
const teardown = new Teardown();
teardown.folder(work);

interface Stage {
  name: string;
  /** What one unit is, e.g. `user`; the per-unit figures divide by `units`. */
  unit: string;
  units: number;
  before: Snapshot;
  after: Snapshot;
  seconds: number;
}

interface PerUnit {
  stage: string;
  unit: string;
  units: number;
  /** used_memory delta without the consumed logs' and the clients' deltas, per unit: what stays. */
  bytes: number;
  /** used_memory delta per unit, consumed logs and clients included. */
  used_memory_bytes: number;
  keys: number;
  /** MEMORY USAGE bytes per unit by key type (the rest of used_memory is Redis's own overhead). */
  bytes_by_type: Record<string, number>;
}

interface TreeResult {
  tree: string;
  commit: string;
  /** Files of engine/, actors/, gateway/, schemas/ changed but not committed, run as they are. */
  uncommitted: string[];
  redis_version: string;
  empty: Snapshot;
  stages: Stage[];
  per_unit: PerUnit[];
}

interface Tree {
  name: string;
  dir: string;
  commit: string;
  uncommitted: string[];
}

// --- One tree -------------------------------------------------------------------------------

/** A tree's engine on its redis-server, with the project the stages write to. */
interface TreeEngine {
  child: Child;
  base: string;
  sdk: string;
  rest: string;
  /** Throws once the engine exited: a stage would otherwise wait for it until it times out. */
  alive(): void;
  /** Whether every consumer group of every stream has caught up. */
  drained(): Promise<boolean>;
}

async function measureTree(tree: Tree, apnsUrl: string): Promise<TreeResult> {
  log(`memory: ${tree.name} (${tree.commit}) from ${tree.dir}`);
  const redisServer = await startRedisServer(work);
  teardown.add('stopping the redis-server', redisServer.stop);
  const redis = teardown.connection(new Redis(redisServer.url, { maxRetriesPerRequest: 2 }));
  const engine = await startTreeEngine(tree, redisServer.url, apnsUrl, redis);
  const stages = await Stages.start(redis, engine.drained);
  await writeState(stages, engine);
  if (settings.webhook_events > 0) await queueWebhookEvents(stages, engine);
  if (settings.recipients > 0) await holdNotification(stages, engine);
  await engine.child.stop();
  const info = await redis.info('server');
  redis.disconnect();
  await redisServer.stop();
  const perUnit = stages.all.filter((s) => !s.name.startsWith('recipient, one push subscription')).map(perUnitOf);
  return { tree: tree.name, commit: tree.commit, uncommitted: tree.uncommitted, redis_version: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown', empty: stages.empty, stages: stages.all, per_unit: perUnit };
}

/** The project and its APNs credentials through the tree's `engine` command, then `engine start` from the tree's sources. */
async function startTreeEngine(tree: Tree, redisUrl: string, apnsUrl: string, redis: Redis): Promise<TreeEngine> {
  const engineBin = join(tree.dir, 'bin/engine.js');
  // Sources, not dist/: a build may be older than the tree. No SQL listener (its fixed port); the
  // silent APNs endpoint and the closed webhook port are on loopback, refused unless allowed.
  // PROVIDER_TIMEOUT_MS at its maximum: no send in flight times out while it is measured.
  const env: Record<string, string> = {
    KEY_PREFIX: 'mem:',
    DATA_DIR: mkdtempSync(join(work, 'data-')),
    REDIS_URL: redisUrl,
    LOG_LEVEL: 'info',
    SQL_PORT: '0',
    OUTBOUND_ALLOW_PRIVATE: 'true',
    ENGINE_FROM_SOURCE: '1',
    PROVIDER_TIMEOUT_MS: '120000',
  };
  const cli = async (...args: string[]): Promise<string> => (await run(process.execPath, [engineBin, ...args], { env: { ...process.env, ...env }, cwd: tree.dir })).stdout;
  const project = JSON.parse(await cli('project', 'create', 'bench-memory', '--json')) as { project_id: string; sdk_key: string; rest_key: string };
  await cli('providers', 'set', project.project_id, 'apns', '--file', apnsCredentials(work, apnsUrl));
  const child = teardown.child(await startChild('engine', [...engineNodeFlags(tree.dir), engineBin, 'start', '--port', '0'], env, { readyMsg: 'started', timeoutMs: 180_000 }));
  const alive = (): void => {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) throw new Error(`the engine exited (${child.proc.exitCode ?? child.proc.signalCode}): ${child.output()}`);
  };
  const drained = async (): Promise<boolean> => {
    alive();
    return (await outstanding(redis)).total === 0;
  };
  return { child, base: `http://127.0.0.1:${child.port}`, sdk: project.sdk_key, rest: project.rest_key, alive, drained };
}

/** The stages of one tree, each measured against the settled state before it. */
class Stages {
  readonly all: Stage[] = [];

  private constructor(
    private readonly redis: Redis,
    private readonly drained: () => Promise<boolean>,
    readonly empty: Snapshot,
    private last: Snapshot,
  ) {}

  static async start(redis: Redis, drained: () => Promise<boolean>): Promise<Stages> {
    const empty = await settle(redis, 'the empty engine', drained);
    log(`  empty engine: used_memory ${empty.used_memory} (${empty.state_memory} without the consumed logs and the clients), ${empty.keys} keys`);
    return new Stages(redis, drained, empty, empty);
  }

  /** Does `act`, waits until `done` holds and the figures are still, and records what it added per unit. */
  async measure(name: string, unit: string, units: number, act: () => Promise<void>, done: () => Promise<boolean> = this.drained): Promise<void> {
    const { last } = this;
    const t0 = performance.now();
    await act();
    const after = await settle(this.redis, name, done);
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    this.all.push({ name, unit, units, before: last, after, seconds });
    const per = (bytes: number): number => Math.round(bytes / units);
    const types = Object.keys(after.by_type).map((t) => `${t} ${per((after.by_type[t]?.bytes ?? 0) - (last.by_type[t]?.bytes ?? 0))}`);
    const logs = after.consumed_logs.bytes - last.consumed_logs.bytes;
    log(
      `  ${name}: ${per(after.state_memory - last.state_memory)} bytes/${unit} (${per(logs)} more in consumed logs), ${((after.keys - last.keys) / units).toFixed(2)} keys/${unit} ` +
        `(${seconds} s; MEMORY USAGE by type ${types.join(', ')}; consumed logs now ${after.consumed_logs.entries} entries, ${Math.round(after.consumed_logs.bytes / 1024)} KiB)`,
    );
    this.last = after;
  }

  /** Settles after a write that is no stage's: the next stage is measured from there. */
  async settle(what: string): Promise<void> {
    this.last = await settle(this.redis, what, this.drained);
  }
}

/** Users with 5 tags and a push subscription, 5 more tags each, a second subscription each, the events. */
async function writeState(stages: Stages, { base, sdk }: TreeEngine): Promise<void> {
  const N = settings.users;
  await stages.measure('user with 5 tags and one push subscription', 'user', N, () =>
    sendOps(base, sdk, 2 * N, (k) => {
      const i = Math.floor(k / 2);
      return k % 2 === 0 ? { op: 'identify', external_id: userId(i), tags: firstTags(i) } : subscribe(userId(i), iosToken(`${userId(i)}/1`));
    }),
  );
  await stages.measure('extra tag', 'tag', settings.extra_tags_per_user * N, () => sendOps(base, sdk, N, (i) => ({ op: 'tags', external_id: userId(i), tags: extraTags(i) })));
  await stages.measure('extra push subscription', 'subscription', N, () => sendOps(base, sdk, N, (i) => subscribe(userId(i), iosToken(`${userId(i)}/2`))));
  await stages.measure('event with an idempotency_key', 'event', settings.events, () =>
    sendOps(base, sdk, settings.events, (i) => ({
      op: 'event',
      external_id: userId(i % N),
      name: 'purchase',
      properties: { sku: `A-${i % 100}`, amount: 12.5 },
      idempotency_key: randomUUID(),
    })),
  );
}

/** `delivery.skipped` events queued for a webhook endpoint on a closed port, one per id nobody registered. */
async function queueWebhookEvents(stages: Stages, engine: TreeEngine): Promise<void> {
  const { base, rest } = engine;
  // A closed port: every attempt is refused at once and the endpoint backs off, its queue kept.
  const closed = await freePort();
  const hook = await call(`${base}/api/webhooks`, 'POST', rest, { url: `http://127.0.0.1:${closed}/hook`, events: ['delivery.skipped'] });
  if (hook.status !== 201) throw new Error(`POST /api/webhooks answered ${hook.status}: ${JSON.stringify(hook.body).slice(0, 300)}`);
  const hookId = (hook.body as { id: string }).id;
  await stages.settle('the webhook endpoint');
  const queued = async (): Promise<boolean> => {
    const view = await call(`${base}/api/webhooks/${hookId}`, 'GET', rest);
    const health = (view.body as { health?: { queued?: number } }).health;
    return (health?.queued ?? 0) >= settings.webhook_events && (await engine.drained());
  };
  // Ids nobody registered: each job is recorded skipped (no_subscription), one event each.
  const ids = Array.from({ length: settings.webhook_events }, (_, i) => `nobody${String(i).padStart(6, '0')}`);
  await stages.measure('queued webhook event (delivery.skipped)', 'event', settings.webhook_events, async () => void (await notify(base, rest, ids)), queued);
}

/** Recipients with a push subscription (a stage of their own), then a notification to them that the silent APNs endpoint holds in flight. */
async function holdNotification(stages: Stages, engine: TreeEngine): Promise<void> {
  const { base, sdk, rest } = engine;
  const R = settings.recipients;
  await stages.measure('recipient, one push subscription (written before the notification)', 'user', R, () =>
    sendOps(base, sdk, R, (i) => subscribe(recipientId(i), iosToken(`${recipientId(i)}/1`))),
  );
  const ids = Array.from({ length: R }, (_, i) => recipientId(i));
  let notifications: string[] = [];
  // Sends never finish: settled once every notification is sending and nothing moves any more.
  const sending = async (): Promise<boolean> => {
    engine.alive();
    for (const id of notifications) {
      const view = await call(`${base}/api/notifications/${id}`, 'GET', rest);
      if ((view.body as { status?: string }).status !== 'sending') return false;
    }
    return true;
  };
  await stages.measure('recipient of a notification in flight (provider never answers)', 'recipient', R, async () => void (notifications = await notify(base, rest, ids)), sending);
}

function perUnitOf(s: Stage): PerUnit {
  const types = new Set([...Object.keys(s.before.by_type), ...Object.keys(s.after.by_type)]);
  const bytesByType = Object.fromEntries([...types].sort().map((t) => [t, round(((s.after.by_type[t]?.bytes ?? 0) - (s.before.by_type[t]?.bytes ?? 0)) / s.units, 1)]));
  const used = s.after.used_memory - s.before.used_memory;
  return {
    stage: s.name,
    unit: s.unit,
    units: s.units,
    bytes: round((s.after.state_memory - s.before.state_memory) / s.units, 1),
    used_memory_bytes: round(used / s.units, 1),
    keys: Math.round(((s.after.keys - s.before.keys) / s.units) * 1000) / 1000,
    bytes_by_type: bytesByType,
  };
}

// --- The run --------------------------------------------------------------------------------

const git = async (...args: string[]): Promise<string> => (await run('git', args, { cwd: root })).stdout.trim();
const ENGINE_DIRS = ['engine', 'actors', 'gateway', 'schemas', 'bin'];

/** The last release's tree: a detached worktree under the temp dir, sharing this tree's node_modules. */
async function baselineTree(): Promise<Tree> {
  const dir = join(work, 'baseline');
  await git('worktree', 'add', '--detach', dir, BASELINE_COMMIT);
  teardown.add(`removing the worktree ${dir}`, async () => void (await git('worktree', 'remove', '--force', dir)));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return { name: BASELINE_NAME, dir, commit: await git('rev-parse', '--short', BASELINE_COMMIT), uncommitted: [] };
}

const GOALS: Record<string, number> = { user: GOAL_USER_BYTES, 'event with an idempotency_key': GOAL_EVENT_BYTES };
const goalOf = (row: PerUnit): number | null => GOALS[row.stage.startsWith('user with') ? 'user' : row.stage] ?? null;

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const apns = await silentApns();
  teardown.add('stopping the silent APNs endpoint', apns.stop);
  const current: Tree = {
    name: 'this tree',
    dir: root,
    commit: await git('rev-parse', '--short', 'HEAD'),
    uncommitted: (await git('status', '--porcelain', '--', ...ENGINE_DIRS)).split('\n').filter(Boolean),
  };
  const mine = await measureTree(current, apns.url);
  const baseline = BASELINE_COMMIT === 'none' ? null : await measureTree(await baselineTree(), apns.url);
  const report = {
    benchmark: 'memory',
    started_at: started,
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings: { ...settings, batch: BATCH, in_flight: IN_FLIGHT },
    goals: { user_bytes: GOAL_USER_BYTES, idempotent_event_bytes: GOAL_EVENT_BYTES },
    summary: summaryRows(mine, baseline),
    trees: baseline === null ? [mine] : [mine, baseline],
    notes: notes(mine, baseline),
  };
  printReport(mine, baseline);
  for (const note of report.notes) console.log(`- ${note}`);
  console.log(`report: ${await writeReport(report)}`);
}

function summaryRows(mine: TreeResult, baseline: TreeResult | null): SummaryRow[] {
  return mine.per_unit.map((row) => {
    const goal = goalOf(row);
    const base = baseline?.per_unit.find((b) => b.stage === row.stage);
    return {
      scenario: 'memory',
      measure: `Redis memory per ${row.stage}`,
      value: row.bytes,
      unit: `bytes/${row.unit}`,
      better: 'lower',
      ceiling: null,
      baseline: base === undefined ? null : { name: BASELINE_NAME, value: base.bytes },
      goal: goal === null ? null : { text: `at most ${goal} bytes`, met: row.bytes <= goal },
    };
  });
}

function notes(mine: TreeResult, baseline: TreeResult | null): string[] {
  const logsPeak = Math.max(...[mine, ...(baseline === null ? [] : [baseline])].flatMap((t) => [t.empty, ...t.stages.map((st) => st.after)]).map((snap) => snap.consumed_logs.bytes));
  return [
    'Measures: Redis used_memory (INFO memory) after each stage minus before it, over the units the stage wrote, on a redis-server of the run\'s own (`--save "" --appendonly no`) with one `engine start` process (every role, embedded ClickHouse, from the tree\'s sources), less the clients\' query and output buffers (mem_clients_normal, which moves by megabytes with the traffic) and the consumed logs (below). Before each reading every consumer group of every stream has read and acknowledged everything (for the notification in flight: it is `sending` and nothing moves) and DBSIZE and used_memory stayed still for two seconds; each figure is the median of three readings.',
    `Consumed logs: streams every consumer group of which has read and acknowledged everything (ingest, changes, outcomes, ...). Their entries wait for a trim: the apply trims an ingest stream only once it holds more than 512 entries, and trims go by whole nodes, so what they hold depends on where each partition's stream stands, bounded per partition, not per unit (up to ${Math.round(logsPeak / 2 ** 20)} MiB in this run). Each reading deletes them in one Lua script, reads used_memory, and restores them before any client sees them gone; MEMORY USAGE misjudges a stream by 5 to 15%, more than some stages weigh. Streams still being worked on (dispatch jobs, webhook queues) count.`,
    'Breakdown: keys per unit is the DBSIZE delta; bytes by type sums MEMORY USAGE (SAMPLES 0) of every key but the consumed logs by TYPE, which leaves out Redis\'s own overhead (the main dictionary, its expires) and misjudges streams, so it need not add up to the used_memory figure. No key name is read.',
    `Workload: SDK batches (POST /api/sdk/batch) of ${BATCH} operations, ${IN_FLIGHT} in flight: identify with 5 tags and subscribe per user, then a tags operation with 5 more, then a second subscribe, then the events. External ids of 10 characters; IOS_PUSH tokens of 64 hex characters with device_model, device_os and app_version; tags short strings and numbers; events \`purchase\` with two properties and a UUID idempotency_key, spread over the users.`,
    'Webhook events: a notification to ids nobody registered gives one delivery.skipped event each, queued for an endpoint on a closed port (every attempt refused, so it backs off and keeps its queue); read once the endpoint\'s health counts them all queued. The delta includes the notification itself, one for every 20 000 events.',
    'Notification in flight: recipients with one IOS_PUSH subscription each (written and measured first, as a stage of its own), APNs at an HTTP/2 server of the benchmark that takes every stream and never answers, PROVIDER_TIMEOUT_MS=120000 so no attempt ends while it is measured; the delta covers the notification, its fan-out and the jobs waiting or pending in dispatch.',
    baseline === null
      ? 'Baseline: none (BENCH_BASELINE_COMMIT=none).'
      : `Baseline: the same workload against ${BASELINE_NAME} (commit ${baseline.commit}) in a git worktree of it with this tree's node_modules, on a fresh redis-server of its own.`,
  ];
}

/** Bytes per unit of each tree side by side, then each tree's breakdown by key type. */
function printReport(mine: TreeResult, baseline: TreeResult | null): void {
  const kb = (bytes: number): string => `${Math.round(bytes / 1024)} KiB`;
  const base = (row: PerUnit, pick: (b: PerUnit) => number): string[] => {
    if (baseline === null) return [];
    const b = baseline.per_unit.find((x) => x.stage === row.stage);
    return [b === undefined ? '' : String(pick(b))];
  };
  const names = baseline === null ? [] : [BASELINE_NAME];
  printRows([
    ['bytes per unit', ...names, 'this tree', 'goal', ...names.map((n) => `keys/unit ${n}`), 'keys/unit this tree'],
    ...mine.per_unit.map((row) => {
      const goal = goalOf(row);
      return [`${row.stage} (${row.units})`, ...base(row, (b) => b.bytes), String(row.bytes), goal === null ? '' : `<= ${goal}: ${row.bytes <= goal ? 'met' : 'not met'}`, ...base(row, (b) => b.keys), String(row.keys)];
    }),
  ]);
  for (const tree of baseline === null ? [mine] : [mine, baseline]) {
    const end = tree.stages[tree.stages.length - 1]?.after ?? tree.empty;
    console.log(`${tree.tree} (${tree.commit}${tree.uncommitted.length > 0 ? `, ${tree.uncommitted.length} engine files uncommitted` : ''}): empty engine ${kb(tree.empty.state_memory)}, ${tree.empty.keys} keys; consumed logs at the end ${end.consumed_logs.entries} entries, ${kb(end.consumed_logs.bytes)}`);
    console.log('  per unit, MEMORY USAGE by key type; the used_memory delta as read (consumed logs and clients in):');
    for (const row of tree.per_unit) {
      const types = Object.entries(row.bytes_by_type).filter(([, v]) => v !== 0).map(([t, v]) => `${t} ${v}`);
      console.log(`    ${row.stage}: ${types.join(', ')}; as read ${row.used_memory_bytes}`);
    }
  }
}

await runBench(main, () => teardown.run());
