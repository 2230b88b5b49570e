/**
 * wrk (C, LuaJIT) as a closed-loop load generator of the SDK mix: far cheaper per request than a
 * Node client (bench/paced.ts on undici costs about 100 µs a request), so on a small machine it
 * leaves the cores to the deployment. scripts/bench.sh installs it with apt-get when it can.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SdkMix } from './sdk-mix.ts';

const script = fileURLToPath(new URL('wrk-mix.lua', import.meta.url));

/** Whether `wrk` is on PATH. */
export function wrkInstalled(): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, 'wrk')));
}

/**
 * Writes one period of `mix`'s sequence into `file` for bench/wrk-mix.lua, a write a line
 * (`METHOD<TAB>PATH<TAB>BODY`); built by a fresh SdkMix like `mix`, so line n is its n-th write.
 */
export async function writeWrkRequests(file: string, mix: Pick<SdkMix, 'users' | 'prefix'>): Promise<void> {
  const copy = new SdkMix(mix.users, mix.prefix);
  const lines: string[] = [];
  for (let n = 0; n < copy.period; n++) {
    const write = copy.next();
    lines.push(`${write.method}\t${write.path}\t${write.body}\n`);
  }
  await writeFile(file, lines.join(''));
}

export interface WrkOptions {
  url: string;
  sdkKey: string;
  /** The file writeWrkRequests wrote. */
  requests: string;
  /** The first line to send: a run goes on where the last stopped. */
  first: number;
  threads: number;
  connections: number;
  seconds: number;
}

/** What wrk counted over its whole run (its duration starts once every thread's init is done). */
export interface WrkResult {
  seconds: number;
  /** Answers received. */
  requests: number;
  /** Answers with a status above 399 (wrk's "Non-2xx or 3xx responses"). */
  non_2xx: number;
  socket_errors: { connect: number; read: number; write: number; timeout: number };
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface WrkRun {
  pid: number;
  /** Resolves once every thread built its requests (wrk-mix.lua's `init`), as the load starts. */
  ready: Promise<void>;
  /** Resolves with wrk's figures once it exited. */
  finished: Promise<WrkResult>;
}

/** Starts wrk with bench/wrk-mix.lua for `seconds`, every request to `url` with the SDK key. */
export function startWrk(opts: WrkOptions): WrkRun {
  const args = [
    ...['-t', String(opts.threads), '-c', String(opts.connections), '-d', `${opts.seconds}s`, '--timeout', '10s', '-s', script],
    ...['-H', `Authorization: Bearer ${opts.sdkKey}`, '-H', 'Content-Type: application/json', opts.url],
    ...['--', opts.requests, String(opts.first), String(opts.threads)],
  ];
  const proc = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let ready = (): void => undefined;
  const readyAt = new Promise<void>((resolve) => (ready = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    if (output.split('wrk-mix: ready').length - 1 >= opts.threads) ready();
  });
  proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const finished = new Promise<WrkResult>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => {
      const done = /wrk-mix: done (\{.*\})/.exec(output)?.[1];
      if (code !== 0 || done === undefined) return reject(new Error(`wrk exited with ${code}:\n${output.slice(-2000)}`));
      resolve(wrkResult(JSON.parse(done) as Record<string, number>));
    });
  });
  // A wrk that fails before it is ready must not leave `ready` waiting.
  finished.then(ready, ready);
  return { pid: proc.pid ?? 0, ready: readyAt, finished };
}

function wrkResult(done: Record<string, number>): WrkResult {
  const n = (name: string): number => done[name] ?? 0;
  const ms = (name: string): number => Math.round(n(name) / 100) / 10;
  return {
    seconds: Math.round(n('duration_us') / 1000) / 1000,
    requests: n('requests'),
    non_2xx: n('non_2xx'),
    socket_errors: { connect: n('connect'), read: n('read'), write: n('write'), timeout: n('timeout') },
    p50_ms: ms('p50_us'),
    p99_ms: ms('p99_us'),
    max_ms: ms('max_us'),
  };
}
