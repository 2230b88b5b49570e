/**
 * The ceiling of bench/broadcast.ts: bare clients (bench/apns-ceiling.ts), each in a process of
 * its own, sending each push type's share of the pushes to the simulator of that type (or to the
 * peer) at that type's own pace, one type after the other: the simulators share one process, so
 * the mix's ceiling is its pushes over the sum of the times.
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { BroadcastDeployment, NodeProcess, PeerCount } from './broadcast-deployment.ts';
import { PROVIDER_OF, shareOf, TYPE_NAMES, type BroadcastOptions, type TypeName } from './broadcast-options.ts';
import { sleep } from './deployment.ts';
import { root } from './paths.ts';
import { log } from './run.ts';
import { round } from './table.ts';

/** The engine's HTTP/1.1 pool keeps up to 32 connections per origin (actors/dispatch/providers/http1.ts). */
const WEBPUSH_CONNECTIONS = 32;

/** One type's share of the pushes, sent by its bare client. */
export interface TypeCeiling {
  pushes: number;
  seconds: number;
  pushes_per_sec: number;
  statuses: unknown;
  connections: unknown;
  inflight: unknown;
  peer_max_streams: unknown;
  cpu_seconds: { client: number; simulator: number; redis: number };
  peer?: PeerCount;
}

export interface Ceiling {
  when: string;
  pushes: number;
  /** The sum of the types' runs. */
  seconds: number;
  pushes_per_sec: number;
  /** Each type's run: its share of the pushes at its own pace. */
  by_type: Record<string, TypeCeiling>;
  /** client, redis, and the simulator's or the peer's. */
  cpu_us_per_push: Record<string, number> & { client: number; redis: number };
  /** The machine's 1-minute load average at the end: other work on the host shows here. */
  load_average: number;
}

/** Every type's share of --ceiling-count, one type after the other. */
export async function runCeiling(dep: BroadcastDeployment, options: BroadcastOptions, when: 'before' | 'after'): Promise<Ceiling> {
  const byType: Record<string, TypeCeiling> = {};
  for (const [k, name] of options.types.entries()) {
    const count = shareOf(options, options.ceilingCount, k);
    if (count > 0) byType[TYPE_NAMES[name]] = await runTypeCeiling(dep, options, name, count);
  }
  const runs = Object.values(byType);
  const sum = (f: (r: TypeCeiling) => number): number => runs.reduce((n, r) => n + f(r), 0);
  const pushes = sum((r) => r.pushes);
  const seconds = sum((r) => r.seconds);
  const ceiling: Ceiling = {
    when,
    pushes,
    seconds: round(seconds, 3),
    pushes_per_sec: Math.round(pushes / seconds),
    by_type: byType,
    cpu_us_per_push: {
      client: round((sum((r) => r.cpu_seconds.client) / pushes) * 1e6, 1),
      [options.providerName]: round((sum((r) => r.cpu_seconds.simulator) / pushes) * 1e6, 1),
      redis: round((sum((r) => r.cpu_seconds.redis) / pushes) * 1e6, 1),
    },
    load_average: round(loadavg()[0] ?? 0, 1),
  };
  log(`bench: ceiling ${ceiling.pushes_per_sec} pushes/s (${Object.entries(byType).map(([t, r]) => `${t} ${r.pushes_per_sec}/s`).join(', ')})`);
  await sleep(2000);
  return ceiling;
}

async function runTypeCeiling(dep: BroadcastDeployment, options: BroadcastOptions, name: TypeName, count: number): Promise<TypeCeiling> {
  const provider = PROVIDER_OF[name];
  log(`bench: ceiling of ${TYPE_NAMES[name]}: ${count} pushes from a bare client to the ${options.peer ? 'h2 peer' : `${provider} simulator`}`);
  if (options.peer) await dep.forget();
  const c0 = await dep.cpuMark();
  const client = dep.processes.spawn('ceiling', ceilingArgs(dep, options, provider, count), process.env);
  const done = await doneLine(client, count);
  const c1 = await dep.cpuMark();
  const peerSaw = await dep.peerCount();
  // The simulator forgets the token in force, so the next sender's newer token is not a 429.
  if (provider === 'apns' && !options.peer) await dep.forget();
  return {
    pushes: Number(done['pushes']),
    seconds: Number(done['seconds']),
    pushes_per_sec: Number(done['per_sec']),
    statuses: done['statuses'],
    connections: done['connections'],
    inflight: done['inflight'],
    peer_max_streams: done['peer_max_streams'],
    cpu_seconds: { client: Number(done['cpu_seconds']), simulator: c1.simulator - c0.simulator, redis: c1.redis - c0.redis },
    ...(peerSaw ? { peer: peerSaw } : {}),
  };
}

function ceilingArgs(dep: BroadcastDeployment, options: BroadcastOptions, provider: (typeof PROVIDER_OF)[TypeName], count: number): string[] {
  const connections = provider === 'webpush' ? String(WEBPUSH_CONNECTIONS) : (options.ceilingConnections ?? (options.peer ? '1' : '4'));
  const creds = provider === 'apns' ? dep.apnsCreds : dep.sims.credentials(provider);
  const args = ['--import', 'tsx', join(root, 'bench/apns-ceiling.ts'), '--provider', provider, '--creds', creds, ...(options.peer ? [] : ['--ca', dep.sims.caFile]), '--count', String(count), '--connections', connections];
  if (provider === 'webpush') args.push('--subscription', join(dep.sims.dir, 'webpush-subscription.json'));
  const inflight = options.ceilingInflight ?? (options.peer ? '1000' : undefined);
  if (inflight) args.push('--inflight', inflight);
  return args;
}

/** The client's `done` line (its progress lines are logged); rejects when it exits without one. */
function doneLine(client: NodeProcess, count: number): Promise<Record<string, unknown>> {
  return new Promise((ok, fail) => {
    let buffered = '';
    let last: Record<string, unknown> | null = null;
    client.stdout?.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (entry['msg'] === 'progress') log(`bench: ceiling ${String(entry['answered'])}/${count} pushes, ${String(entry['per_sec'])}/s`);
        if (entry['msg'] === 'done') last = entry;
      }
    });
    client.once('exit', (code) => (last ? ok(last) : fail(new Error(`ceiling exited with ${code}: ${client.output().slice(-1000)}`))));
  });
}
