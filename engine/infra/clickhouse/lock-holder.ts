import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UnavailableError } from '../../../schemas/errors.ts';

/** A process that holds the embedded engine's data directory. */
export interface LockHolder {
  pid: number;
  /** Its command line, when /proc shows it. */
  command?: string;
}

/**
 * The embedded engine's data directory is held by another process. The engine's ClickHouse
 * process only says ClickHouse's "Cannot lock file" as it ends, so this names the holder and what
 * to do. Unavailable (503 at the gateway): the other process may stop.
 */
export class EngineLockedError extends UnavailableError {
  constructor(
    readonly path: string,
    readonly holder: LockHolder | undefined,
    options?: { cause?: unknown },
  ) {
    const who = holder ? `process ${holder.pid}${holder.command ? ` (${holder.command})` : ''}` : 'another process';
    super(
      `the embedded ClickHouse in ${path} is held by ${who}; one process at a time may open it: ` +
        'stop that process, or set CLICKHOUSE_URL to a ClickHouse server that every process uses',
      1,
      options,
    );
    this.name = 'EngineLockedError';
  }
}

/**
 * The process other than this one holding the lock ClickHouse takes on `<path>/status` (flock)
 * while it runs, from /proc/locks, named by the engine whose own ClickHouse process it is;
 * undefined when none does or this is not Linux.
 */
export function embeddedLockHolder(path: string): LockHolder | undefined {
  let inode: number;
  let device: string;
  let locks: string;
  try {
    const stat = statSync(join(path, 'status'));
    inode = stat.ino;
    device = `${hex(deviceMajor(stat.dev))}:${hex(deviceMinor(stat.dev))}`;
    locks = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined;
  }
  // "1: FLOCK  ADVISORY  WRITE 32597 fe:00:2304741 0 EOF"
  for (const line of locks.split('\n')) {
    const fields = line.trim().split(/\s+/);
    const pid = Number(fields[4]);
    if (fields[1] === 'FLOCK' && fields[5] === `${device}:${inode}` && pid !== process.pid) return describe(pid);
  }
  return undefined;
}

/** The engine's own ClickHouse process (./host/main.ts) and its sandbox: named by the engine that started them. */
const HOST_COMMAND = /clickhouse[/\\]host[/\\]main\.[jt]s|^bwrap /;

function describe(pid: number): LockHolder {
  const command = commandOf(pid);
  if (command !== undefined && HOST_COMMAND.test(command)) {
    const parent = parentOf(pid);
    if (parent !== undefined && parent > 1) return describe(parent);
  }
  return command ? { pid, command } : { pid };
}

function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return undefined;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const ppid = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

// Linux dev_t encoding (glibc gnu_dev_major/minor), as /proc/locks prints it.
function deviceMajor(dev: number): number {
  return ((dev >>> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & 0xfffff000);
}

function deviceMinor(dev: number): number {
  return (dev & 0xff) | ((Math.floor(dev / 2 ** 12) & 0xffffff00) >>> 0);
}

function hex(n: number): string {
  return n.toString(16).padStart(2, '0');
}
