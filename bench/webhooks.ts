/**
 * Webhooks benchmark: how many events per second one `webhooks` process delivers to a fast local
 * receiver (bench/webhook-receiver.ts, its own process), from delivery outcomes in the Redis
 * streams to the receiver's 204: tap, queue per endpoint, signing, POST, settle; and the CPU per
 * event of that process and of Redis. Two shapes: events of many notifications (sent alongside,
 * up to WEBHOOK_CONCURRENCY) and of one notification (sent one after another, for order).
 * Ceiling, in the same run: a bare loop in this process signing the same bodies with the
 * standardwebhooks package and POSTing them with undici to the same receiver, as many in flight.
 * Goal: at least 2 000 events/s per process.
 * Run with `node --import tsx bench/webhooks.ts` (or `make bench`).
 *
 * Environment: BENCH_EVENTS (per shape, default 40000), REDIS_URL, ENGINE_FROM_SOURCE=1. Writes
 * bench/reports/webhooks.json; deletes its key prefix and data.
 */
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { loadConfig } from '../engine/infra/process/config.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { WebhookRegistry } from '../engine/state/webhooks/registry.ts';
import type { OutcomeEntry } from '../schemas/outcomes.ts';
import { engineBin, engineNodeFlags } from './engine-build.ts';
import { startChild, type Child } from './child.ts';
import { sampleCpu } from './cpu.ts';
import { appendOutcomes } from './outcomes.ts';
import { root } from './paths.ts';
import { writeReport } from './report.ts';
import { runBench, Teardown } from './run.ts';
import { positive } from './settings.ts';
import type { SummaryRow } from './summary.ts';

const GOAL = 2000;
const EVENTS = positive('BENCH_EVENTS', 40_000);
const CEILING = 'bare loop: standardwebhooks signing and undici POSTs, as many in flight';
const prefix = `benchwh${Date.now().toString(36)}:`;
const dataDir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
const env = { ...process.env, KEY_PREFIX: prefix, DATA_DIR: dataDir, LOG_LEVEL: 'info', OUTBOUND_ALLOW_PRIVATE: 'true', SQL_PORT: '0' } as Record<string, string>;
const config = loadConfig(env);
const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
const teardown = new Teardown();
teardown.folder(dataDir);
teardown.keys(prefix, config.REDIS_URL.split(',')[0]);

type Shape = 'many notifications' | 'one notification';

function outcome(project: string, shape: Shape, n: number): OutcomeEntry {
  return {
    id: `${project}-d${n}`,
    project,
    notification_id: shape === 'one notification' ? 'n-one' : `n${n % 500}`,
    external_id: `user-${n}`,
    channel: 'PUSH',
    subscription_type: 'IOS_PUSH',
    token_tail: `…${(n % 65536).toString(16).padStart(4, '0')}`,
    attempt: 1,
    status: 'sent',
    error_code: null,
    hint: null,
    provider_message_id: `pm-${n}`,
    latency_ms: 5,
    retrying: false,
    at: Date.now(),
  };
}

async function received(receiver: Child): Promise<{ events: number; posts: number }> {
  const res = await request(`http://127.0.0.1:${receiver.port}/count`);
  return (await res.body.json()) as { events: number; posts: number };
}

interface Measured {
  shape: Shape;
  seconds: number;
  events_per_sec: number;
  posts: number;
  cpu_us_per_event: { webhooks_process: number; redis: number };
}

/** One shape: outcomes filled first, then a fresh webhooks process drains them to the receiver. */
async function measure(redis: RedisClient, receiver: Child, shape: Shape, index: number): Promise<Measured> {
  const project = `benchproject${index}`;
  const registry = new WebhookRegistry(redis, topology);
  const before = await received(receiver);
  const hook = await registry.create(project, { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['delivery.sent'] });
  await appendOutcomes(redis, topology, EVENTS, (n) => outcome(project, shape, n));
  const engine = teardown.child(await startChild('webhooks', [...engineNodeFlags(), await engineBin(), 'start', '--roles', 'webhooks'], env, { readyMsg: 'started', timeoutMs: 30_000, listens: false }));
  try {
    const cpu = await sampleCpu(engine.proc.pid ?? 0, redis);
    const t0 = performance.now();
    let now = before;
    while (now.events - before.events < EVENTS) {
      if (engine.proc.exitCode !== null) throw new Error(`the webhooks process exited: ${engine.output()}`);
      await new Promise((r) => setTimeout(r, 100));
      now = await received(receiver);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cores = await cpu.stop();
    const per = (share: number): number => Math.round(((share * seconds) / EVENTS) * 1e7) / 10;
    await registry.delete(project, hook.id);
    return {
      shape,
      seconds: Number(seconds.toFixed(2)),
      events_per_sec: Math.round(EVENTS / seconds),
      posts: now.posts - before.posts,
      cpu_us_per_event: { webhooks_process: per(cores.server), redis: per(cores.redis) },
    };
  } finally {
    await engine.stop();
  }
}

/** The ceiling: this process signs and POSTs the same bodies, `inFlight` at once. */
async function ceiling(receiver: Child, inFlight: number): Promise<{ events_per_sec: number; cpu_us_per_event: number }> {
  const webhook = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
  const agent = new Agent({ connections: inFlight, keepAliveTimeout: 30_000 });
  const url = `http://127.0.0.1:${receiver.port}/hook`;
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    for (let n = next++; n < EVENTS; n = next++) {
      const id = `evt_ceiling_${n}`;
      const body = JSON.stringify({ id, type: 'delivery.sent', at: new Date().toISOString(), data: outcome('ceiling', 'many notifications', n) });
      const at = new Date();
      const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': webhook.sign(id, at, body) };
      const res = await request(url, { method: 'POST', dispatcher: agent, headers, body });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu0);
  await agent.close();
  return { events_per_sec: Math.round(EVENTS / seconds), cpu_us_per_event: Math.round(((used.user + used.system) / EVENTS) * 10) / 10 };
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const redis = teardown.connection(createRedis(config));
  const receiver = teardown.child(await startChild('receiver', ['--import', 'tsx', join(root, 'bench/webhook-receiver.ts')], env, { timeoutMs: 30_000 }));
  const bare = await ceiling(receiver, config.WEBHOOK_CONCURRENCY);
  const shapes: Shape[] = ['many notifications', 'one notification'];
  const runs: Measured[] = [];
  for (const [i, shape] of shapes.entries()) runs.push(await measure(redis, receiver, shape, i));
  const report = {
    benchmark: 'webhooks',
    started_at: started,
    finished_at: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version },
    settings: { events_per_shape: EVENTS, partitions: topology.partitions, concurrency: config.WEBHOOK_CONCURRENCY },
    summary: summaryRows(runs, bare),
    runs,
    ceiling: { name: CEILING, ...bare },
    notes: [
      'Measures: one `engine start --roles webhooks` process turning delivery outcomes already in the Redis streams into events, queuing them per endpoint, signing and POSTing them to a receiver in its own process that answers 204 at once, from the receiver\'s view: from the process start until it has every event.',
      '`many notifications`: 500 notifications, so up to WEBHOOK_CONCURRENCY POSTs are in flight; `one notification`: every event of one notification, which go one after another (their order).',
      `Ceiling: ${CEILING}, from this process, with the same concurrency; CPU of this process only.`,
      `Machine: ${cpus().length} cores shared by Redis, the webhooks process, the receiver and this benchmark.`,
    ],
  };
  console.log(`ceiling, ${CEILING}: ${bare.events_per_sec} events/s, ${bare.cpu_us_per_event} µs CPU per event`);
  for (const run of runs) {
    const met = run.events_per_sec >= GOAL ? 'met' : 'not met';
    console.log(
      `webhooks, ${run.shape}: ${run.events_per_sec} events/s (goal ${GOAL}: ${met}; ${Math.round((run.events_per_sec / bare.events_per_sec) * 100)}% of the ceiling), ` +
        `${run.cpu_us_per_event.webhooks_process} µs CPU per event in the webhooks process, ${run.cpu_us_per_event.redis} µs in Redis; ${run.posts} POSTs`,
    );
  }
  console.log(`report: ${await writeReport(report)}`);
}

function summaryRows(runs: Measured[], bare: { events_per_sec: number; cpu_us_per_event: number }): SummaryRow[] {
  return runs.flatMap((run): SummaryRow[] => [
    {
      scenario: 'webhooks',
      measure: `events delivered, ${run.shape}`,
      value: run.events_per_sec,
      unit: 'events/s',
      better: 'higher',
      ceiling: { name: CEILING, value: bare.events_per_sec },
      baseline: null,
      goal: { text: `at least ${GOAL} events/s per process`, met: run.events_per_sec >= GOAL },
    },
    {
      scenario: 'webhooks',
      measure: `webhooks process CPU per event, ${run.shape}`,
      value: run.cpu_us_per_event.webhooks_process,
      unit: 'µs/event',
      better: 'lower',
      ceiling: { name: CEILING, value: bare.cpu_us_per_event },
      baseline: null,
      goal: null,
    },
  ]);
}

await runBench(main, () => teardown.run());
