import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** A process's worker id: `<hostname>-<pid>-<6 hex>`, unique per process (leases, consumers, journals). */
export function newWorkerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/**
 * Whether the worker an id names is a process still running on this host. Ids of other hosts, or
 * that are not worker ids, count as not running here.
 */
export function workerRunsHere(id: string): boolean {
  const match = /^(.*)-(\d+)-[0-9a-f]{6}$/.exec(id);
  if (!match || match[1] !== hostname()) return false;
  try {
    process.kill(Number(match[2]), 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
