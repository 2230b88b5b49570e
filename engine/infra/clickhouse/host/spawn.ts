import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, sep } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { UnavailableError } from '../../../../schemas/errors.ts';
import type { Logger } from '../../process/log.ts';

/** How long the host may take to open the data directory and answer. */
const READY_MS = 60_000;
/** How long a stopping host may take before it is killed. */
const STOP_MS = 5000;

export type SandboxMode = 'auto' | 'required' | 'off';

/** Paths absolute: the host's working directory is not the engine's. */
export interface HostOptions {
  /** The chDB data directory (DATA_DIR/clickhouse). */
  dataPath: string;
  /** Where the engine writes insert files the host reads (INSERT … FROM INFILE). */
  inbox: string;
  /** A folder of the host's own: its socket, and its working directory when it runs without the sandbox. */
  workPath: string;
  sandbox: SandboxMode;
  log?: Logger;
}

/** A running host: where it answers, and for which password. */
export interface ClickHouseHost {
  socketPath: string;
  password: string;
  /** Whether it runs in the sandbox (read-only file system but its data, no network). */
  sandboxed: boolean;
  pid: number;
  /** Settles when the process has ended, with its exit code (null when killed). */
  exited: Promise<number | null>;
  /** Stops it (SIGTERM, then SIGKILL after STOP_MS). Idempotent. */
  stop(): Promise<void>;
}

/** The host process failed to start; its last words are in the message. */
export class HostStartError extends UnavailableError {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message, 1);
    this.name = 'HostStartError';
  }
}

type HostChild = ChildProcessByStdio<Writable, Readable, Readable>;

const require = createRequire(import.meta.url);
const own = fileURLToPath(import.meta.url);
/** The host's entry, next to this file: main.ts from the sources (through tsx), main.js in dist/. */
const MAIN = join(dirname(own), `main${extname(own)}`);
/** The folder holding node_modules (and the sources or dist/): the host reads it. */
const PACKAGE_ROOT = require.resolve('chdb').split(`${sep}node_modules${sep}`)[0] ?? dirname(own);
/**
 * The folder whose node_modules the host's code finds chdb in: PACKAGE_ROOT, unless node_modules
 * is a link to another checkout's (then the host reads both).
 */
const CODE_ROOT = ((): string => {
  for (let dir = dirname(own); dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'node_modules', 'chdb'))) return dir;
  return PACKAGE_ROOT;
})();

/**
 * The sandbox, before the binds of the host's own paths: the file system read-only, fresh /dev,
 * /proc and /tmp, and namespaces of its own for the network, processes and IPC, no capabilities,
 * a session of its own, an environment of nothing it is not given, and death with the engine.
 */
const SANDBOX = [
  ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
  ...['--unshare-net', '--unshare-pid', '--unshare-ipc', '--new-session', '--cap-drop', 'ALL', '--clearenv', '--die-with-parent'],
];

let sandboxChecked: string | undefined;

/**
 * Why the sandbox cannot run here (bubblewrap missing, or namespaces refused), or '' when it can;
 * tried once per process.
 */
function sandboxProblem(): string {
  if (sandboxChecked !== undefined) return sandboxChecked;
  const tried = spawnSync('bwrap', [...SANDBOX, 'true'], { encoding: 'utf8' });
  sandboxChecked = tried.error
    ? `bwrap (Debian package bubblewrap) is not installed: ${tried.error.message}`
    : tried.status === 0
      ? ''
      : `bwrap cannot create namespaces here: ${(tried.stderr ?? '').trim() || `exit ${tried.status}`}`;
  return sandboxChecked;
}

/**
 * Starts the embedded ClickHouse in a process of its own (docs/architecture.md, "The embedded
 * engine's own process"). In the sandbox (bubblewrap) it sees the file system read-only but for
 * its data directory, a private /tmp that is also its working directory, and no network; so a
 * query that wrote a file or called a server would reach nothing of the host.
 */
export async function startHost(options: HostOptions): Promise<ClickHouseHost> {
  const problem = options.sandbox === 'off' ? 'CLICKHOUSE_SANDBOX=off' : sandboxProblem();
  if (problem !== '' && options.sandbox === 'required') {
    throw new HostStartError(`CLICKHOUSE_SANDBOX=required, but the ClickHouse host cannot run in its sandbox: ${problem}`, '');
  }
  if (problem !== '' && options.sandbox === 'auto') {
    const fields = { reason: problem, docs: 'docs/sql.md#layers' };
    if (options.log) options.log.warn('clickhouse host runs without its sandbox', fields);
    else process.stderr.write(`engine: the embedded ClickHouse runs without its sandbox: ${problem} (docs/sql.md#layers)\n`);
  }
  const sandboxed = problem === '';
  // Its socket's folder: no one but the engine's user may reach the socket, whatever the umask.
  mkdirSync(options.workPath, { recursive: true, mode: 0o700 });
  chmodSync(options.workPath, 0o700);
  // The socket lives in the host's folder, whose stale socket a killed host left is replaced; in
  // a folder of its own under the system's temporary one when that path is too long (a Unix
  // socket's path may not exceed 107 bytes).
  const inFolder = join(options.workPath, 'socket');
  const socketDir = inFolder.length < 100 ? options.workPath : mkdtempSync(join(tmpdir(), 'ch-host-'));
  const socketPath = socketDir === options.workPath ? inFolder : join(socketDir, 's');
  rmSync(socketPath, { force: true });
  const password = randomBytes(24).toString('hex');
  const node = [process.execPath, ...(extname(MAIN) === '.ts' ? ['--import', import.meta.resolve('tsx')] : []), MAIN];
  // Only what the host needs: none of the engine's secrets. The password comes on standard input.
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', CLICKHOUSE_HOST_DATA: options.dataPath, CLICKHOUSE_HOST_SOCKET: socketPath };
  if (process.env['TZ'] !== undefined) env['TZ'] = process.env['TZ'];
  const bind = (how: string, path: string): string[] => (existsSync(path) ? [how, path, path] : []);
  const [command = '', ...args] = sandboxed
    ? [
        'bwrap',
        ...SANDBOX,
        ...Object.entries(env).flatMap(([name, value]) => ['--setenv', name, value]),
        // What lives under /tmp (a test's data, a checkout) is bound again over the private /tmp.
        ...bind('--ro-bind', PACKAGE_ROOT),
        ...(CODE_ROOT === PACKAGE_ROOT ? [] : bind('--ro-bind', CODE_ROOT)),
        ...bind('--ro-bind', dirname(process.execPath)),
        ...['--bind', options.dataPath, options.dataPath, '--bind', socketDir, socketDir],
        ...bind('--ro-bind', options.inbox),
        ...['--chdir', '/tmp', '--'],
        ...node,
      ]
    : node;
  const child: HostChild = spawn(command, args, { cwd: options.workPath, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.write(`${password}\n`);
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8192);
  });
  try {
    await ready(child, exited, () => stderr);
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    rmSync(socketDir === options.workPath ? socketPath : socketDir, { recursive: true, force: true });
    throw err;
  }
  // Past start, what it says goes to the engine's log.
  child.stderr.removeAllListeners('data');
  child.stderr.on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (line.trim() !== '') options.log?.warn('clickhouse host', { line });
  });
  let stopping: Promise<void> | undefined;
  return {
    socketPath,
    password,
    sandboxed,
    pid: child.pid ?? 0,
    exited,
    stop: () => {
      stopping ??= (async () => {
        child.stdin.end();
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_MS);
        await exited;
        clearTimeout(timer);
        rmSync(socketDir === options.workPath ? socketPath : socketDir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/**
 * What a host that ended before it answered said: the error line of its node's crash (a stack
 * and the version follow it, which say nothing), else its last three lines.
 */
export function lastWords(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  return lines.find((line) => /^([A-Z][A-Za-z]*)?Error\b/.test(line)) ?? lines.slice(-3).join(' ');
}

/** Resolves once the host prints `ready`; rejects with its last words when it ends first. */
function ready(child: HostChild, exited: Promise<number | null>, stderr: () => string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new HostStartError(`the ClickHouse host did not answer within ${READY_MS} ms`, stderr())), READY_MS);
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('ready\n')) {
        clearTimeout(timer);
        child.stdout.resume();
        resolve();
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new HostStartError(`the ClickHouse host could not start: ${err.message}`, stderr()));
    });
    void exited.then((code) => {
      clearTimeout(timer);
      const said = lastWords(stderr());
      reject(new HostStartError(`the ClickHouse host ended with ${code ?? 'a signal'} before it answered${said ? `: ${said}` : ''}`, stderr()));
    });
  });
}
