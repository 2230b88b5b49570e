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
   * Resolves with [code, applied, invalid, appliedId, outboxLength, pendingLeft].
   */
  applyBatch(...args: Arg[]): Promise<[number, number, number, string, number, number]>;
  /**
   * settleBatch-1.lua: acknowledges a recorded batch and trims its stream below the batch, never
   * below an entry pending in any group. Resolves with [pendingLeft, trimmedTo].
   */
  settleBatch(stream: string, group: string, lastId: string, ...ids: string[]): Promise<[number, string]>;
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
  /**
   * takeToken-1.lua: takes a token from a key's rate-limit bucket (`perSecond` refill, at most
   * `burst` held), timed by Redis's clock; 0 when taken, else the ms until one will be there.
   */
  takeToken(bucket: string, perSecond: number, burst: number): Promise<number>;
}

/** A script's source with each `-- #include <name>` line replaced by engine/lua/include/<name>.lua. */
function scriptSource(file: string): string {
  return readFileSync(luaDir + file, 'utf8').replace(/^-- #include (\w+)$/gm, (_, name: string) =>
    readFileSync(`${luaDir}include/${name}.lua`, 'utf8'),
  );
}

/** Registers every script of engine/lua on a client with defineCommand (once, at start). */
export function loadScripts(client: Redis | Cluster): void {
  for (const file of readdirSync(luaDir)) {
    const match = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
    if (!match?.[1] || !match[2]) continue;
    client.defineCommand(match[1], { numberOfKeys: Number(match[2]), lua: scriptSource(file) });
  }
}
