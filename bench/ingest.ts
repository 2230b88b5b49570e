/**
 * Ingest benchmark: how many buffered SDK writes one gateway process accepts per second
 * on this machine, next to the ceiling measured in the same run (bench/bare-server.ts: uWebSockets.js
 * answering 202 and nothing else). Run with `make bench` or `node --import tsx bench/ingest.ts`.
 *
 * Environment: BENCH_SECONDS (measured seconds per load, default 10), BENCH_WARMUP_SECONDS
 * (default 3), BENCH_CONNECTIONS (default 100), REDIS_URL. Writes bench/reports/ingest.json;
 * deletes its Redis key prefix at the end.
 */
import { cpus } from 'node:os';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Keystore } from '../engine/state/keys/keystore.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { engineBin, engineNodeFlags } from './engine-build.ts';
import { startChild, type Child } from './child.ts';
import { sampleCpu } from './cpu.ts';
import { measure, type LoadSettings, type Measurement } from './load.ts';
import { root } from './paths.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import type { SummaryRow } from './summary.ts';
import { positive } from './settings.ts';
import { printRows } from './table.ts';

const GOAL = 0.75;
const USERS_IN_EVENTS = 10_000;

const settings: LoadSettings = {
  seconds: positive('BENCH_SECONDS', 10),
  warmupSeconds: positive('BENCH_WARMUP_SECONDS', 3, true),
  connections: positive('BENCH_CONNECTIONS', 100),
};
const prefix = `bench${Date.now().toString(36)}:`;
const config = loadConfig({ ...process.env, KEY_PREFIX: prefix });
const teardown = new Teardown();
teardown.keys(prefix, config.REDIS_URL.split(',')[0]);

type Measured = Measurement & { ratio_to_ceiling: number | null };

interface Report {
  benchmark: string;
  started_at: string;
  finished_at: string;
  machine: { cpus: number; cpu_model: string; node: string };
  settings: Record<string, number>;
  /** The gateway should reach at least this share of the ceiling's requests/s. */
  goal_ratio: number;
  results: Measured[];
  /** Entries found in the ingest streams after the gateway runs (warm-up included); null if not measured. */
  ingest_entries_appended: number | null;
  /** Why the gateway was not measured, or null. */
  gateway_error: string | null;
  summary: SummaryRow[];
  notes: string[];
}

const notes = [
  'Measures: one gateway process accepting buffered SDK writes (auth, validation, XADD to the Redis ingest log, 202) over HTTP/1.1 keep-alive, one request in flight per connection (no pipelining).',
  'Ceiling: a bare uWebSockets.js process that reads the body and answers 202, measured in the same run with the same load generator and request bodies.',
  'Does not measure: apply workers (not running, so the ingest log only grows), the spill journal, WebSocket ingest, batches, more than one gateway process.',
  `Machine: ${cpus().length} cores shared by the load generator, the server under test and Redis (${config.REDIS_URL}); other work on the machine skews the figures.`,
];

let counter = 0;
const usersBody = (): string => {
  counter += 1;
  return JSON.stringify({ external_id: `bench-user-${counter}`, tags: { plan: 'pro', level: counter % 10 } });
};
const eventsBody = (): string => {
  counter += 1;
  return JSON.stringify({
    external_id: `bench-user-${counter % USERS_IN_EVENTS}`,
    name: 'purchase',
    properties: { sku: `A-${counter % 50}`, amount: 12.5 },
  });
};

/** The request shapes measured, each against the ceiling and the gateway. */
const loads = [
  { load: 'users', path: '/api/sdk/users', body: usersBody },
  { load: 'events', path: '/api/sdk/events', body: eventsBody },
];

async function main(): Promise<void> {
  const startedAt = new Date();
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const project = await new Keystore(redis, topology).createProject('bench', false);
  const headers = { authorization: `Bearer ${project.sdk_key}` };
  const results: Measurement[] = [];

  log(`bench: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s per load`);
  // Both servers run from the start (an idle one costs nothing) so that each gateway load is
  // measured right after its ceiling: background work on the machine then skews both alike.
  const bare = teardown.child(await startChild('bare', ['--import', 'tsx', `${root}bench/bare-server.ts`], {}, { timeoutMs: 30_000 }));
  const { gateway, gatewayError } = await startGateway();
  for (const { load, path, body } of loads) {
    for (const [server, child] of [['ceiling', bare], ['gateway', gateway]] as const) {
      if (child === null) continue;
      log(`bench: ${server} ${load} (POST ${path})`);
      const target = { server, load, url: `http://127.0.0.1:${child.port}`, path, headers, body };
      results.push(await measure(target, settings, () => sampleCpu(child.proc.pid ?? 0, redis)));
    }
  }
  await Promise.all([bare.stop(), gateway?.stop()]);
  const appended = gateway === null ? null : await ingestLength(redis, topology);
  redis.disconnect();

  const measured = withRatios(results);
  const report: Report = {
    benchmark: 'ingest',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version },
    settings: {
      seconds: settings.seconds,
      warmup_seconds: settings.warmupSeconds,
      connections: settings.connections,
      pipelining: 1,
      partitions: config.PARTITIONS,
    },
    goal_ratio: GOAL,
    results: measured,
    ingest_entries_appended: appended,
    gateway_error: gatewayError,
    summary: summaryRows(measured),
    notes,
  };
  printTable(report);
  const file = await writeReport(report);
  log(`bench: report written to ${file}`);
  // A run that could not measure the gateway did not do its job: say so in the exit status too.
  if (gatewayError) process.exitCode = 1;
}

/** `engine start --roles gateway`; when it does not start, the run goes on with the ceiling alone and says why. */
async function startGateway(): Promise<{ gateway: Child | null; gatewayError: string | null }> {
  try {
    const gateway = await startChild('gateway', [...engineNodeFlags(), await engineBin(), 'start', '--roles', 'gateway', '--port', '0'], { KEY_PREFIX: prefix, LOG_LEVEL: 'info' }, {
      readyMsg: 'started',
      timeoutMs: 30_000,
    });
    return { gateway: teardown.child(gateway), gatewayError: null };
  } catch (err) {
    const gatewayError = err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
    log(`bench: gateway not measured: ${gatewayError}`);
    return { gateway: null, gatewayError };
  }
}

/**
 * Each gateway run's requests/s over the ceiling's for the same load; null when most answers were
 * not 2xx (then the rate means nothing).
 */
function withRatios(results: Measurement[]): Measured[] {
  return results.map((r) => {
    const ceiling = results.find((c) => c.server === 'ceiling' && c.load === r.load)?.requests_per_sec ?? 0;
    const valid = r.server !== 'ceiling' && ceiling > 0 && r.status_2xx >= r.requests * 0.99;
    return { ...r, ratio_to_ceiling: valid ? Math.round((r.requests_per_sec / ceiling) * 1000) / 1000 : null };
  });
}

/** One summary row per gateway load, next to the bare server's rate for the same load. */
function summaryRows(results: Measured[]): SummaryRow[] {
  return results
    .filter((r) => r.server === 'gateway')
    .map((r) => {
      const ceiling = results.find((c) => c.server === 'ceiling' && c.load === r.load);
      return {
        scenario: 'gateway',
        measure: `gateway alone, POST ${r.path}`,
        value: r.requests_per_sec,
        unit: 'req/s',
        better: 'higher',
        ceiling: ceiling ? { name: 'bare uWebSockets.js', value: ceiling.requests_per_sec } : null,
        baseline: null,
        goal: { text: `at least ${GOAL * 100}% of bare uWebSockets.js`, met: r.ratio_to_ceiling !== null && r.ratio_to_ceiling >= GOAL },
      };
    });
}

/** Entries in every ingest partition stream of the bench prefix: what the 2xx answers promised. */
async function ingestLength(redis: RedisClient, topology: Topology): Promise<number> {
  const lengths = await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.xlen(topology.ingest(p))));
  return lengths.reduce((a, b) => a + b, 0);
}

/** Prints the results as a table on stdout, then what the figures mean. */
function printTable(report: Report): void {
  printRows([
    ['server', 'load', 'path', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'cores gen/srv/redis', 'vs ceiling'],
    ...report.results.map((r) => [
      r.server,
      r.load,
      r.path,
      String(r.requests_per_sec),
      String(r.p50_ms),
      String(r.p99_ms),
      String(r.status_2xx),
      String(r.non_2xx),
      String(r.errors + r.timeouts),
      `${r.cpu_cores.load_generator.toFixed(2)}/${r.cpu_cores.server.toFixed(2)}/${r.cpu_cores.redis.toFixed(2)}`,
      r.server === 'ceiling' ? '' : ratioText(r.ratio_to_ceiling, report.goal_ratio),
    ]),
  ]);
  if (report.gateway_error) console.log(`gateway not measured: ${report.gateway_error}`);
  if (report.ingest_entries_appended !== null) {
    const accepted = report.results.filter((r) => r.server === 'gateway').reduce((sum, r) => sum + r.status_2xx + r.warmup_2xx, 0);
    const verdict = report.ingest_entries_appended >= accepted ? 'every 202 is in the log' : 'FEWER entries than 202 answers';
    console.log(`ingest log: ${report.ingest_entries_appended} entries for ${accepted} gateway 2xx answers, warm-up included (${verdict})`);
  }
  for (const note of report.notes) console.log(`- ${note}`);
}

function ratioText(ratio: number | null, goal: number): string {
  if (ratio === null) return 'n/a (answers not 2xx)';
  return `${Math.round(ratio * 100)}% (goal ${Math.round(goal * 100)}%: ${ratio >= goal ? 'met' : 'not met'})`;
}

await runBench(main, () => teardown.run());
