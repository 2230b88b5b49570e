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
  /** apply-4.lua: applies a batch of ingest entries of one partition (actors/partition). */
  applyBatch(...args: Arg[]): Promise<unknown>;
  /** renewLease-1.lua: extends a lease only while this worker owns it. */
  renewLease(...args: Arg[]): Promise<number>;
  /** releaseLease-1.lua: deletes a lease only while this worker owns it. */
  releaseLease(...args: Arg[]): Promise<number>;
  /** claimToken-1.lua: records the newest owner of a subscription token; returns the one it displaced. */
  claimToken(...args: Arg[]): Promise<unknown>;
}

/** Registers every script of engine/lua on a client with defineCommand (once, at start). */
export function loadScripts(client: Redis | Cluster): void {
  for (const file of readdirSync(luaDir)) {
    const match = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
    if (!match?.[1] || !match[2]) continue;
    client.defineCommand(match[1], { numberOfKeys: Number(match[2]), lua: readFileSync(luaDir + file, 'utf8') });
  }
}
