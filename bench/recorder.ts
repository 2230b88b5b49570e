/**
 * Recorder benchmark: how many delivery outcomes per second one recorder process moves
 * from the Redis outcomes streams into ClickHouse `message_deliveries` (read through the consumer
 * group, insert in batches with their checks, acknowledge, trim), and the CPU per row of the
 * recorder's own threads, of ClickHouse (the embedded engine's own process, started by the recorder:
 * its threads, bench/cpu.ts) and of Redis. Ceiling, measured in the same run: a bare INSERT of the
 * same rows into the same ClickHouse (already JSON text, through the recorder's own insert, in
 * batches of the same size, from this process, which starts an embedded engine's process too), with
 * its ClickHouse CPU per row.
 * Goals: 200k rows/s; the recorder's own CPU at most 10 µs per row.
 * Run with `node --import tsx bench/recorder.ts` (or `make bench`).
 *
 * Environment: BENCH_ROWS (outcomes, default 1000000), REDIS_URL, RECORDER_NODE_FLAGS (node flags
 * of the recorder process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, which NODE_OPTIONS does not
 * take), ENGINE_FROM_SOURCE=1 (run the TypeScript sources, not the dist/ build). Writes
 * bench/reports/recorder.json; deletes its key prefix and data.
 */
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecorderLimits } from '../actors/recorder/limits.ts';
import { openClickHouse, type ClickHouse } from '../engine/infra/clickhouse/client.ts';
import { insertJsonLines } from '../engine/infra/clickhouse/insert.ts';
import { loadConfig } from '../engine/infra/process/config.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import type { OutcomeEntry } from '../schemas/outcomes.ts';
import { engineBin, engineNodeFlags } from './engine-build.ts';
import { startChild } from './child.ts';
import { isClickHouseThread, sampleCpu, threadCpu, threadCpuBetween, type CpuShare } from './cpu.ts';
import { appendOutcomes } from './outcomes.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import type { SummaryRow } from './summary.ts';
import { positive } from './settings.ts';

const GOAL_ROWS_PER_SEC = 200_000;
const GOAL_OWN_US_PER_ROW = 10;
const CEILING = 'bare INSERT of the same rows into the same ClickHouse';
const ROWS = positive('BENCH_ROWS', 1_000_000);
const prefix = `benchrec${Date.now().toString(36)}:`;
const dataDir = mkdtempSync(join(tmpdir(), 'bench-recorder-'));
const env = { ...process.env, KEY_PREFIX: prefix, DATA_DIR: dataDir, LOG_LEVEL: 'info' };
const nodeFlags = (process.env['RECORDER_NODE_FLAGS'] ?? '').split(' ').filter(Boolean);
const config = loadConfig(env);
const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
const teardown = new Teardown();
teardown.folder(dataDir);
teardown.keys(prefix, config.REDIS_URL.split(',')[0]);
const PROJECT = 'benchproject';
const errors = ['apns_410_Unregistered', 'fcm_404_UNREGISTERED', 'timeout', 'webpush_410', 'twilio_21610'];
const types = ['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH'] as const;

/** A realistic outcome: mostly sent, some failed with a provider code, a few skipped. */
function outcome(n: number, project: string): OutcomeEntry {
  const roll = n % 100;
  const status = roll < 90 ? 'sent' : roll < 98 ? 'failed' : 'skipped';
  const code = status === 'sent' ? null : status === 'skipped' ? 'opted_out' : (errors[n % errors.length] ?? 'timeout');
  return {
    id: `${project}-d${n}`,
    project,
    notification_id: `n${Math.floor(n / 5000)}`,
    external_id: `user-${n % 200_000}`,
    channel: 'PUSH',
    subscription_type: types[n % types.length] ?? 'IOS_PUSH',
    token_tail: `…${(n % 65536).toString(16).padStart(4, '0')}`,
    attempt: 1,
    status,
    error_code: code,
    hint: code === null ? null : 'See the error code reference.',
    provider_message_id: status === 'sent' ? `pm-${n}` : null,
    latency_ms: status === 'skipped' ? null : 5 + (n % 40),
    retrying: false,
    at: Date.now() - (ROWS - n),
  };
}

/** Outcomes still unread or unacknowledged by the recorder group, over every partition (asked at once). */
async function outstanding(redis: RedisClient): Promise<number> {
  const counts = await Promise.all(
    Array.from({ length: topology.partitions }, async (_, p) => {
      const stream = topology.outcomes(p);
      const groups = (await redis.xinfo('GROUPS', stream).catch(() => null)) as unknown[][] | null;
      const group = groups?.find((g) => g[g.indexOf('name') + 1] === 'recorder');
      if (!group) return redis.xlen(stream);
      return Number(group[group.indexOf('pending') + 1]) + Number(group[group.indexOf('lag') + 1]);
    }),
  );
  return counts.reduce((sum, n) => sum + n, 0);
}

/** CPU seconds by thread name, split into ClickHouse's threads and the rest (node's). */
function split(byName: Record<string, number>): { own: number; clickhouse: number } {
  let own = 0;
  let clickhouse = 0;
  for (const [name, seconds] of Object.entries(byName)) {
    if (isClickHouseThread(name)) clickhouse += seconds;
    else own += seconds;
  }
  return { own, clickhouse };
}

const perRow = (seconds: number): number => Math.round((seconds / ROWS) * 1e7) / 10;
const rounded = (byName: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(byName).filter(([, v]) => v >= 0.005).map(([k, v]) => [k, Math.round(v * 100) / 100]));

/** What the recorder process spent draining the backlog. */
interface Drain {
  seconds: number;
  /** CPU seconds by thread name. */
  threads: Record<string, number>;
  cores: CpuShare;
}

/** Starts one recorder process on the filled backlog and times it until no outcome is unread or pending. */
async function drain(redis: RedisClient): Promise<Drain> {
  const recorder = teardown.child(await startChild('recorder', [...engineNodeFlags(), ...nodeFlags, await engineBin(), 'start', '--roles', 'recorder'], env, { readyMsg: 'started', timeoutMs: 30_000, listens: false }));
  const pid = recorder.proc.pid ?? 0;
  const cpu = await sampleCpu(pid, redis);
  const threads0 = await threadCpu(pid);
  const t0 = performance.now();
  while ((await outstanding(redis)) > 0) {
    if (recorder.proc.exitCode !== null || recorder.proc.signalCode !== null) throw new Error(`the recorder exited (${recorder.proc.exitCode ?? recorder.proc.signalCode}) with outcomes left`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = (performance.now() - t0) / 1000;
  const threads = threadCpuBetween(threads0, await threadCpu(pid));
  const cores = await cpu.stop();
  await recorder.stop();
  return { seconds, threads, cores };
}

/**
 * The ceiling: the same row shape inserted directly, batch by batch, into the same engine. The
 * rows are built between inserts on node's main thread, so only ClickHouse's threads count.
 */
async function bareInsert(ch: ClickHouse): Promise<{ ms: number; threads: Record<string, number> }> {
  const ceilingProject = `${PROJECT}-ceiling`;
  let ms = 0;
  const threads0 = await threadCpu('self');
  for (let n = 0; n < ROWS; n += RecorderLimits.maxBatch) {
    const lines: string[] = [];
    for (let i = n; i < Math.min(ROWS, n + RecorderLimits.maxBatch); i++) lines.push(JSON.stringify({ ...outcome(i, ceilingProject), stream_id: `${i}-0` }));
    const batch = Buffer.from(lines.join('\n'));
    const t = performance.now();
    await insertJsonLines(ch, 'message_deliveries_in', batch, `ceiling|${n}`);
    ms += performance.now() - t;
  }
  const threads = Object.fromEntries(Object.entries(threadCpuBetween(threads0, await threadCpu('self'))).filter(([name]) => isClickHouseThread(name)));
  return { ms, threads };
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const redis = teardown.connection(createRedis(config));
  log(`filling ${ROWS} outcomes into ${topology.partitions} partitions...`);
  await appendOutcomes(redis, topology, ROWS, (n) => outcome(n, PROJECT));
  const recorder = await drain(redis);
  const ch = await openClickHouse({ DATA_DIR: dataDir, CLICKHOUSE_SANDBOX: 'auto' });
  const counted = await ch.query({ query: 'SELECT count() AS c FROM message_deliveries WHERE project = {p:String}', query_params: { p: PROJECT }, format: 'JSONEachRow' });
  const recorded = Number((await counted.json<{ c: string }>())[0]?.c);
  const ceiling = await bareInsert(ch);
  await ch.close();
  const report = recorderReport(started, recorder, recorded, ceiling);
  printReport(report, recorder);
  console.log(`report: ${await writeReport(report)}`);
}

function recorderReport(started: string, recorder: Drain, recorded: number, ceiling: { ms: number; threads: Record<string, number> }) {
  const recorderRate = Math.round(ROWS / recorder.seconds);
  const ceilingRate = Math.round(ROWS / (ceiling.ms / 1000));
  const own = split(recorder.threads);
  const us = {
    own: perRow(own.own),
    clickhouse: perRow(own.clickhouse),
    redis: perRow(recorder.cores.redis * recorder.seconds),
    ceiling_clickhouse: perRow(split(ceiling.threads).clickhouse),
  };
  return {
    benchmark: 'recorder',
    started_at: started,
    finished_at: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version },
    settings: { rows: ROWS, partitions: topology.partitions, max_batch: RecorderLimits.maxBatch },
    goals: { rows_per_sec: GOAL_ROWS_PER_SEC, own_cpu_us_per_row: GOAL_OWN_US_PER_ROW },
    summary: summaryRows(recorderRate, ceilingRate, us),
    recorder: {
      seconds: Number(recorder.seconds.toFixed(2)),
      rows_per_sec: recorderRate,
      rows_recorded: recorded,
      cores: { recorder_process: recorder.cores.server, redis: recorder.cores.redis, benchmark: recorder.cores.load_generator },
      cpu_us_per_row: { recorder_own: us.own, clickhouse: us.clickhouse, recorder_process: Math.round((us.own + us.clickhouse) * 10) / 10, redis: us.redis },
      /** CPU seconds of the recorder process over the drain, by thread name. */
      threads_cpu_seconds: rounded(recorder.threads),
    },
    ceiling: {
      name: CEILING,
      seconds: Number((ceiling.ms / 1000).toFixed(2)),
      rows_per_sec: ceilingRate,
      cpu_us_per_row: { clickhouse: us.ceiling_clickhouse },
      /** CPU seconds of this process's ClickHouse threads over the inserts, by thread name. */
      threads_cpu_seconds: rounded(ceiling.threads),
    },
    ratio_to_ceiling: Number((recorderRate / ceilingRate).toFixed(2)),
    notes: [
        'Measures: one `engine start --roles recorder` process draining a backlog of outcomes from Redis into embedded ClickHouse (consumer-group reads as bytes, inserts of up to 10k rows through message_deliveries_in with its checks, acknowledgements, trims), from its start until no outcome is unread or pending; and the CPU the recorder process and Redis spent per row meanwhile.',
        "CPU split: ClickHouse runs in the embedded engine's own process, a child of the recorder (engine/infra/clickhouse/host/): the recorder process's threads are its own, every thread of that child (/proc/<pid>/task/*/stat, `clickhouse-host/…`) is ClickHouse's, its HTTP server's main thread included. Background merges during the drain are included.",
        `Ceiling: ${CEILING}: this process inserting the same rows, already as JSON text, through the recorder's own insert (insertJsonLines into message_deliveries_in, with its checks and deduplication token) in batches of 10k rows; rows/s over insert time only, CPU of this process's ClickHouse threads over the whole loop (merges meanwhile included; building the rows runs on node's main thread and is left out).`,
        'Does not measure: the changes stream (users, events, receipts), a ClickHouse server, more than one recorder process.',
        `Machine: ${cpus().length} cores shared by Redis, the recorder and ClickHouse (the recorder's child process), and this benchmark's progress polling.`,
    ],
  };
}

function summaryRows(recorderRate: number, ceilingRate: number, us: { own: number; clickhouse: number; ceiling_clickhouse: number }): SummaryRow[] {
  return [
    {
      scenario: 'recorder',
      measure: 'outcomes recorded, Redis streams to ClickHouse',
      value: recorderRate,
      unit: 'rows/s',
      better: 'higher',
      ceiling: { name: CEILING, value: ceilingRate },
      baseline: null,
      goal: { text: `at least ${GOAL_ROWS_PER_SEC / 1000}k rows/s`, met: recorderRate >= GOAL_ROWS_PER_SEC },
    },
    {
      scenario: 'recorder',
      measure: "recorder's own CPU per row (node threads)",
      value: us.own,
      unit: 'µs/row',
      better: 'lower',
      ceiling: null,
      baseline: null,
      goal: { text: `at most ${GOAL_OWN_US_PER_ROW} µs/row`, met: us.own <= GOAL_OWN_US_PER_ROW },
    },
    {
      scenario: 'recorder',
      measure: 'ClickHouse CPU per row, in the recorder\'s embedded engine',
      value: us.clickhouse,
      unit: 'µs/row',
      better: 'lower',
      ceiling: { name: CEILING, value: us.ceiling_clickhouse },
      baseline: null,
      goal: null,
    },
  ];
}

function printReport(report: ReturnType<typeof recorderReport>, recorder: Drain): void {
  const { rows_per_sec: recorderRate, rows_recorded: recorded, cpu_us_per_row: us, cores } = report.recorder;
  const { rows_per_sec: ceilingRate } = report.ceiling;
  console.log(`recorder: ${recorderRate} rows/s (${ROWS} rows in ${recorder.seconds.toFixed(2)} s; ${recorded} rows in ClickHouse)`);
  console.log(`  CPU per row: recorder's own ${us.recorder_own} µs (goal <= ${GOAL_OWN_US_PER_ROW}: ${us.recorder_own <= GOAL_OWN_US_PER_ROW ? 'met' : 'not met'}), ClickHouse ${us.clickhouse} µs, Redis ${us.redis} µs (cores busy: ${cores.recorder_process} + ${cores.redis})`);
  console.log('  recorder process CPU seconds by thread:');
  for (const [name, seconds] of Object.entries(report.recorder.threads_cpu_seconds)) console.log(`    ${name.padEnd(18)} ${seconds.toFixed(2).padStart(7)}  ${isClickHouseThread(name) ? 'ClickHouse' : 'recorder'}`);
  console.log(`ceiling, ${CEILING}: ${ceilingRate} rows/s, ClickHouse ${report.ceiling.cpu_us_per_row.clickhouse} µs/row; recorder end to end at ${Math.round(report.ratio_to_ceiling * 100)}% of it`);
  console.log(`goal ${GOAL_ROWS_PER_SEC} rows/s: end to end ${recorderRate >= GOAL_ROWS_PER_SEC ? 'met' : 'not met'}; bare insert ${ceilingRate >= GOAL_ROWS_PER_SEC ? 'met' : 'not met'}`);
  for (const note of report.notes) console.log(`- ${note}`);
}

await runBench(main, () => teardown.run());
