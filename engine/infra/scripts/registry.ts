import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { applyBatch } from './apply-batch.ts';
import { upgradeUser, writeConsent } from './consent.ts';
import type { AnyContract, Command } from './contract.ts';
import { appendJobs, loadRecipients, offerToken, recordAttempts, releaseDue, takeCapSlot } from './dispatch.ts';
import { scriptProblems, SCRIPT_FILE } from './header.ts';
import { heartbeat, releaseLease, renewLeases, setIfAbsent } from './lease.ts';
import { markRound, settleBatch, settleTapped } from './settle-batch.ts';
import { createGroup, oldestUnread, queueEvents } from './streams.ts';
import { takeToken } from './take-token.ts';
import { appendDetach, claimToken, clearDetach, tokenOwner } from './token-claims.ts';

const luaDir = fileURLToPath(new URL('./lua/', import.meta.url));

/**
 * The Lua commands of engine/infra/scripts/lua, one file per Redis operation, named `<command>-<numberOfKeys>.lua`
 * (`<command>-n.lua` when it takes a list of keys),
 * each with its contract declared once under engine/infra/scripts. Call them through these wrappers.
 */
export const scripts = {
  applyBatch,
  settleBatch,
  settleTapped,
  heartbeat,
  setIfAbsent,
  renewLeases,
  releaseLease,
  createGroup,
  queueEvents,
  oldestUnread,
  markRound,
  writeConsent,
  upgradeUser,
  claimToken,
  clearDetach,
  appendDetach,
  tokenOwner,
  takeToken,
  appendJobs,
  loadRecipients,
  takeCapSlot,
  recordAttempts,
  releaseDue,
  offerToken,
};

/** The commands loadScripts defines on a client; the wrappers in `scripts` call them. */
export type ScriptCommands = Record<keyof typeof scripts, Command>;

export const contracts: readonly AnyContract[] = Object.values(scripts).map((s) => s.contract);

/** The script files of engine/infra/scripts/lua (name -> source as written, includes not inlined). */
export function scriptFiles(): Map<string, string> {
  const files = readdirSync(luaDir).filter((f) => f.endsWith('.lua'));
  return new Map(files.map((f) => [f, readFileSync(luaDir + f, 'utf8')]));
}

/** A script's source with each `-- #include <name>` line replaced by engine/infra/scripts/lua/include/<name>.lua. */
function inlined(source: string): string {
  return source.replace(/^-- #include (\w+)$/gm, (_, name: string) => readFileSync(`${luaDir}include/${name}.lua`, 'utf8'));
}

/**
 * Registers every script of engine/infra/scripts/lua on a client with defineCommand (once, at start), after
 * checking each header against its declaration: a mismatch would send arguments in the wrong slots.
 */
export function loadScripts(client: Redis | Cluster): void {
  const files = scriptFiles();
  const problems = scriptProblems(files, contracts);
  if (problems.length > 0) throw new Error(`Lua scripts disagree with their declarations:\n${problems.join('\n')}`);
  for (const [file, source] of files) {
    const name = SCRIPT_FILE.exec(file)?.[1];
    const contract = contracts.find((c) => c.name === name);
    // Without numberOfKeys a call sends its key count first (a key list: engine/infra/scripts/contract.ts).
    if (contract) client.defineCommand(contract.name, contract.keyList ? { lua: inlined(source) } : { numberOfKeys: contract.keys.length, lua: inlined(source) });
  }
}
