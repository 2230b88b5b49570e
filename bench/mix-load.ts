/**
 * The closed-loop load generators of the SDK mix, each a child process so its CPU is read apart
 * from this process's and the deployment's: wrk (C, LuaJIT; bench/wrk-mix.lua), far cheaper per
 * request than a Node client (bench/paced.ts on undici costs about 100 µs a request), and
 * autocannon (bench/autocannon-mix.ts), the Node generator the project's goals name. Both send one
 * period of the mix that writeMixRequests wrote to a file, from a given line, and print the same
 * `ready` and `done {json}` lines. scripts/bench.sh installs wrk with apt-get when it can.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SdkMix } from './sdk-mix.ts';

const wrkScript = fileURLToPath(new URL('wrk-mix.lua', import.meta.url));
const autocannonScript = fileURLToPath(new URL('autocannon-mix.ts', import.meta.url));

/** Whether `wrk` is on PATH. */
export function wrkInstalled(): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, 'wrk')));
}

/**
 * Writes one period of `mix`'s sequence into `file`, a write a line (`METHOD<TAB>PATH<TAB>BODY`);
 * built by a fresh SdkMix like `mix`, so line n is its n-th write.
 */
export async function writeMixRequests(file: string, mix: Pick<SdkMix, 'users' | 'prefix'>): Promise<void> {
  const copy = new SdkMix(mix.users, mix.prefix);
  const lines: string[] = [];
  for (let n = 0; n < copy.period; n++) {
    const write = copy.next();
    lines.push(`${write.method}\t${write.path}\t${write.body}\n`);
  }
  await writeFile(file, lines.join(''));
}

export interface MixLoadOptions {
  url: string;
  sdkKey: string;
  /** The file writeMixRequests wrote. */
  requests: string;
  /** The first line to send: a run goes on where the last stopped. */
  first: number;
  seconds: number;
}

/** What the generator counted over its whole run (from its `ready` on). */
export interface MixLoadResult {
  seconds: number;
  /** Answers received. */
  requests: number;
  /** Answers not 2xx (wrk counts statuses above 399 only). */
  non_2xx: number;
  /** Socket errors (connect, read, write), timeouts apart. */
  errors: number;
  timeouts: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface MixLoadRun {
  pid: number;
  /** Resolves once the generator built its requests, as the load starts. */
  ready: Promise<void>;
  /** Resolves with its figures once it exited. */
  finished: Promise<MixLoadResult>;
}

/** A closed-loop generator with its settings. */
export interface MixLoad {
  /** `wrk` or `autocannon`. */
  name: string;
  /** How the logs and the report name it, e.g. `wrk -t1 -c256`. */
  label: string;
  connections: number;
  start(opts: MixLoadOptions): MixLoadRun;
}

/** wrk with bench/wrk-mix.lua, `threads` threads sharing `connections` connections. */
export function wrkLoad(threads: number, connections: number): MixLoad {
  return {
    name: 'wrk',
    label: `wrk -t${threads} -c${connections}`,
    connections,
    start: (opts) =>
      startMixLoad('wrk-mix', 'wrk', threads, [
        ...['-t', String(threads), '-c', String(connections), '-d', `${opts.seconds}s`, '--timeout', '10s', '-s', wrkScript],
        ...['-H', `Authorization: Bearer ${opts.sdkKey}`, '-H', 'Content-Type: application/json', opts.url],
        ...['--', opts.requests, String(opts.first), String(threads)],
      ]),
  };
}

/** autocannon (bench/autocannon-mix.ts) on `connections` connections, no pipelining. */
export function autocannonLoad(connections: number): MixLoad {
  return {
    name: 'autocannon',
    label: `autocannon -c${connections} -p1`,
    connections,
    start: (opts) =>
      startMixLoad('autocannon-mix', process.execPath, 1, [
        ...['--import', 'tsx', autocannonScript],
        ...[opts.url, opts.sdkKey, opts.requests, String(opts.first), String(connections), String(opts.seconds)],
      ]),
  };
}

/** Spawns a generator that prints `<tag>: ready` `readyLines` times, then `<tag>: done {json}`. */
function startMixLoad(tag: string, command: string, readyLines: number, args: string[]): MixLoadRun {
  const proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let ready = (): void => undefined;
  const readyAt = new Promise<void>((resolve) => (ready = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    if (output.split(`${tag}: ready`).length - 1 >= readyLines) ready();
  });
  proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const finished = new Promise<MixLoadResult>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => {
      const done = new RegExp(`${tag}: done (\\{.*\\})`).exec(output)?.[1];
      if (code !== 0 || done === undefined) return reject(new Error(`${command} exited with ${code}:\n${output.slice(-2000)}`));
      resolve(mixLoadResult(JSON.parse(done) as Record<string, number>));
    });
  });
  // A generator that fails before it is ready must not leave `ready` waiting.
  finished.then(ready, ready);
  return { pid: proc.pid ?? 0, ready: readyAt, finished };
}

function mixLoadResult(done: Record<string, number>): MixLoadResult {
  const n = (name: string): number => done[name] ?? 0;
  const ms = (name: string): number => Math.round(n(name) / 100) / 10;
  return {
    seconds: Math.round(n('duration_us') / 1000) / 1000,
    requests: n('requests'),
    non_2xx: n('non_2xx'),
    errors: n('errors'),
    timeouts: n('timeouts'),
    p50_ms: ms('p50_us'),
    p99_ms: ms('p99_us'),
    max_ms: ms('max_us'),
  };
}
