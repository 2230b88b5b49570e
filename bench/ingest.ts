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
import { fileURLToPath } from 'node:url';
import { cleanupPrefix } from './redis.ts';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Keystore } from '../engine/state/keys/keystore.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { Children, startChild, type Child } from './child.ts';
import { sampleCpu } from './cpu.ts';
import { measure, type LoadSettings, type Measurement } from './load.ts';
import { printTable, writeReport, type Report } from './report.ts';
import { log, runBench } from './run.ts';
import type { SummaryRow } from './summary.ts';
import { positive } from './settings.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const GOAL = 0.75;
const USERS_IN_EVENTS = 10_000;

const settings: LoadSettings = {
  seconds: positive('BENCH_SECONDS', 10),
  warmupSeconds: positive('BENCH_WARMUP_SECONDS', 3, true),
  connections: positive('BENCH_CONNECTIONS', 100),
};
const prefix = `bench${Date.now().toString(36)}:`;
const config = loadConfig({ ...process.env, KEY_PREFIX: prefix });
const children = new Children();

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
  const bare = await children.track(startChild('bare', ['--import', 'tsx', `${root}bench/bare-server.ts`], {}, { timeoutMs: 30_000 }));
  let gateway: Child | null = null;
  let gatewayError: string | null = null;
  try {
    gateway = await children.track(
      startChild('gateway', [`${root}bin/engine.js`, 'start', '--roles', 'gateway', '--port', '0'], { KEY_PREFIX: prefix, LOG_LEVEL: 'info' }, {
        readyMsg: 'started',
        timeoutMs: 30_000,
      }),
    );
  } catch (err) {
    gatewayError = err instanceof Error ? (err.message.split('\n')[0] ?? err.message) : String(err);
    log(`bench: gateway not measured: ${gatewayError}`);
  }
  for (const { load, path, body } of loads) {
    for (const [server, child] of [['ceiling', bare], ['gateway', gateway]] as const) {
      if (child === null) continue;
      log(`bench: ${server} ${load} (POST ${path})`);
      const target = { server, load, url: `http://127.0.0.1:${child.port}`, path, headers, body };
      results.push(await measure(target, settings, () => sampleCpu(child.proc.pid ?? 0, redis)));
    }
  }
  await children.stopAll();
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
  const file = await writeReport(`${root}bench/reports`, report);
  log(`bench: report written to ${file}`);
  // A run that could not measure the gateway did not do its job: say so in the exit status too.
  if (gatewayError) process.exitCode = 1;
}

/**
 * Each gateway run's requests/s over the ceiling's for the same load; null when most answers were
 * not 2xx (then the rate means nothing).
 */
function withRatios(results: Measurement[]): (Measurement & { ratio_to_ceiling: number | null })[] {
  return results.map((r) => {
    const ceiling = results.find((c) => c.server === 'ceiling' && c.load === r.load)?.requests_per_sec ?? 0;
    const valid = r.server !== 'ceiling' && ceiling > 0 && r.status_2xx >= r.requests * 0.99;
    return { ...r, ratio_to_ceiling: valid ? Math.round((r.requests_per_sec / ceiling) * 1000) / 1000 : null };
  });
}

/** One summary row per gateway load, next to the bare server's rate for the same load. */
function summaryRows(results: (Measurement & { ratio_to_ceiling: number | null })[]): SummaryRow[] {
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

async function cleanup(): Promise<void> {
  await children.stopAll();
  await cleanupPrefix(prefix, config.REDIS_URL.split(',')[0]);
}



await runBench(main, cleanup, log);
