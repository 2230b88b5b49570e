import { performance } from 'node:perf_hooks';
import autocannon, { type Request, type Result } from 'autocannon';
import type { SdkMix } from './sdk-mix.ts';

/** A system under test: where it listens, its keys, and how to wait until all it accepted is applied. */
export interface System {
  name: string;
  base: string;
  sdkKey: string;
  restKey: string;
  /** Its processes, whose CPU the benchmarks read. */
  pids: number[];
  settle(): Promise<void>;
}

export interface MaxRate {
  source: 'measured' | 'given';
  /** The 202s of the measured run over its seconds; null when given. */
  accepted_per_sec: number | null;
  /** The 202s over the time from the start until the last was applied; null when given. */
  applied_per_sec: number | null;
  max_per_sec: number;
}

/**
 * The maximum sustained rate of the SDK mix: after a 3 s warm-up, a closed-loop autocannon run (100
 * connections, no pipelining) of `seconds`; the 202s over the time from its start until every one
 * was applied, so a system that accepts faster than it applies is held to what it applies.
 */
export async function measureMax(sys: System, mix: SdkMix, seconds: number, log: (line: string) => void): Promise<MaxRate> {
  const request: Request = {
    method: 'POST',
    path: '/',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${sys.sdkKey}` },
    setupRequest: (req) => {
      const write = mix.next();
      return { ...req, method: write.method, path: write.path, body: write.body };
    },
  };
  const load = (seconds: number): Promise<Result> =>
    Promise.resolve(autocannon({ url: sys.base, connections: 100, duration: seconds, pipelining: 1, timeout: 10, requests: [request] }));
  log(`bench: ${sys.name}: maximum: 3 s warm-up, then ${seconds} s closed loop, 100 connections`);
  await load(3);
  await sys.settle();
  const t0 = performance.now();
  const result = await load(seconds);
  const loaded = performance.now();
  await sys.settle();
  const applied = performance.now();
  if (result['2xx'] < result.requests.total * 0.99) throw new Error(`${sys.name}: only ${result['2xx']} of ${result.requests.total} answers were 2xx`);
  const acceptedPerSec = Math.round(result['2xx'] / ((loaded - t0) / 1000));
  const appliedPerSec = Math.round(result['2xx'] / ((applied - t0) / 1000));
  log(`bench: ${sys.name}: ${acceptedPerSec} writes/s accepted, ${appliedPerSec}/s accepted and applied`);
  return { source: 'measured', accepted_per_sec: acceptedPerSec, applied_per_sec: appliedPerSec, max_per_sec: Math.min(acceptedPerSec, appliedPerSec) };
}
