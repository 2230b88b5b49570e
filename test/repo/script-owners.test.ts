import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { scripts } from '../../engine/infra/scripts/registry.ts';

/**
 * A script that writes an owner's keys is called only from that owner (docs/architecture.md,
 * "Redis keys"); the scripts of the infrastructure (leases, groups, token buckets, the log) are
 * called by whoever owns the keys it hands them. Every script has its callers listed here, so a
 * new one fails the type check until it has an owner.
 */
const callers: Record<keyof typeof scripts, readonly string[]> = {
  applyBatch: ['engine/state/users'],
  writeConsent: ['engine/state/users'],
  upgradeUser: ['engine/state/users'],
  claimToken: ['engine/state/users'],
  clearDetach: ['engine/state/users'],
  tokenOwner: ['engine/state/users'],
  appendJobs: ['engine/state/notifications'],
  recordAttempts: ['engine/state/notifications'],
  queueEvents: ['engine/state/webhooks'],
  markRound: ['actors/recorder'],
  settleBatch: ['actors/recorder'],
  offerToken: ['actors/dispatch'],
  takeCapSlot: ['actors/dispatch'],
  // Read a user's record and a notification's cancel mark; they write nothing.
  loadRecipients: ['actors/dispatch'],
  // The infrastructure's: the caller owns the keys it names.
  settleTapped: ['actors/webhooks'],
  appendDetach: ['actors/partition'],
  releaseDue: ['engine/state/notifications', 'actors/dispatch'],
  heartbeat: ['engine/infra/runner'],
  createGroup: ['engine/infra/runner'],
  setIfAbsent: ['engine/infra/runner', 'actors/recorder'],
  renewLeases: ['engine/infra/runner'],
  releaseLease: ['engine/infra/runner'],
  oldestUnread: ['gateway/ingest'],
  takeToken: ['gateway/server', 'engine/state/notifications'],
};

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The product's .ts files, as repository paths. */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return path === 'gateway/dashboard/client' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface Call {
  file: string;
  script: string;
}

/** The script calls of the files that import the registry: `scripts.<name>(`, across lines too. */
function scriptCalls(files: readonly string[]): Call[] {
  return files.flatMap((file) => {
    const text = readFileSync(join(root, file), 'utf8');
    if (!/from '[./]+(?:[\w-]+\/)*scripts\/registry\.ts'|from '\.\/registry\.ts'/.test(text)) return [];
    return [...text.matchAll(/\bscripts\s*\.\s*(\w+)\s*\(/g)].map((m) => ({ file, script: m[1] ?? '' }));
  });
}

/** Calls from a folder the script's list does not name. */
function strayCalls(calls: readonly Call[]): string[] {
  return calls
    .filter(({ file, script }) => !(callers[script as keyof typeof scripts] ?? []).some((dir) => file.startsWith(`${dir}/`)))
    .map(({ file, script }) => `${file} calls ${script}`);
}

const calls = scriptCalls(['engine', 'gateway', 'actors', 'bin'].flatMap(sources));

t.test('each script is called only by the owner of the keys it writes', async (t) => {
  t.ok(calls.length >= Object.keys(scripts).length, `${calls.length} calls found`);
  t.same(strayCalls(calls), []);
});

t.test('every script is called, from each folder its list names', async (t) => {
  const called = new Set(calls.map((c) => `${c.script} ${callers[c.script as keyof typeof scripts]?.find((dir) => c.file.startsWith(`${dir}/`)) ?? ''}`));
  const listed = Object.entries(callers).flatMap(([script, dirs]) => dirs.map((dir) => `${script} ${dir}`));
  t.same(listed.filter((entry) => !called.has(entry)), []);
});

t.test('a planted call from outside the owner is found', async (t) => {
  const planted: Call[] = [
    { file: 'actors/dispatch/record.ts', script: 'recordAttempts' },
    { file: 'gateway/routes/users.ts', script: 'writeConsent' },
    { file: 'engine/state/users/planted.ts', script: 'noSuchScript' },
  ];
  t.equal(strayCalls([...calls, ...planted]).length, planted.length);
});
