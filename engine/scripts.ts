import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';

const luaDir = fileURLToPath(new URL('./lua/', import.meta.url));

type Arg = string | number | Buffer;

/**
 * The Lua commands of engine/lua, one file per Redis operation, named `<command>-<numberOfKeys>.lua`
 * (each file's header lists its KEYS and ARGV). Add a signature here with each new script.
 */
export interface ScriptCommands {
  /**
   * applyBatch-5.lua: applies a batch of ingest entries of one partition (actors/partition).
   * KEYS lease, applied, ingest, changes, outbox; ARGV as its header lists, then id/JSON pairs.
   * Resolves with [code, applied, invalid, appliedId, registrations].
   */
  applyBatch(...args: Arg[]): Promise<[number, number, number, string, number]>;
  /** renewLease-1.lua: extends a lease only while this worker owns it; 1 when extended. */
  renewLease(lease: string, workerId: string, leaseMs: number): Promise<number>;
  /** releaseLease-1.lua: deletes a lease only while this worker owns it; 1 when released. */
  releaseLease(lease: string, workerId: string): Promise<number>;
  /**
   * claimToken-1.lua: records a registration of a subscription token (newest wins); resolves with
   * the detaches owed on it as a flat [externalId, registeredAt, ...] list.
   */
  claimToken(token: string, externalId: string, registeredAt: number): Promise<string[]>;
  /** clearDetach-1.lua: forgets an owed detach once sent, if still the same value; 1 when cleared. */
  clearDetach(token: string, externalId: string, registeredAt: string): Promise<number>;
}

/** Registers every script of engine/lua on a client with defineCommand (once, at start). */
export function loadScripts(client: Redis | Cluster): void {
  for (const file of readdirSync(luaDir)) {
    const match = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
    if (!match?.[1] || !match[2]) continue;
    client.defineCommand(match[1], { numberOfKeys: Number(match[2]), lua: readFileSync(luaDir + file, 'utf8') });
  }
}
