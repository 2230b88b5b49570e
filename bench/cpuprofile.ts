import type { ChildProcess } from 'node:child_process';
import { copyFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** One function of a CPU profile and the time sampled in it (not in what it called). */
export interface ProfileFunction {
  name: string;
  /** `path:line`, the path relative to the repository (or node:internal/…); empty for V8's own nodes. */
  at: string;
  self_ms: number;
  /** Of the busy time (the profile but its idle samples). */
  self_pct: number;
}

export interface ProfileSummary {
  duration_ms: number;
  samples: number;
  /** Share of the profile spent waiting for work. */
  idle_pct: number;
  /** Share of the busy time in garbage collection. */
  gc_pct: number;
  top: ProfileFunction[];
}

/** The parts of a V8 `.cpuprofile` (DevTools protocol `Profiler.Profile`) read here; times in µs. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * The `top` functions of a `.cpuprofile` (as `node --cpu-prof` writes) by self time, idle
 * left out. A sample
 * lasts until the next one, as DevTools counts it; a function's nodes (one per call path) are
 * summed.
 */
export async function summarizeProfile(file: string, root: string, top = 20): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const rootUrl = pathToFileURL(root).href.replace(/\/?$/, '/');
  const keyOf = new Map<number, { name: string; at: string }>();
  for (const { id, callFrame: f } of profile.nodes) {
    const path = f.url.startsWith(rootUrl) ? f.url.slice(rootUrl.length) : f.url;
    keyOf.set(id, { name: f.functionName === '' ? '(anonymous)' : f.functionName, at: path === '' ? '' : `${path}:${f.lineNumber + 1}` });
  }
  const self = new Map<string, { name: string; at: string; us: number }>();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    const next = i + 1 < profile.samples.length ? t + (profile.timeDeltas[i + 1] ?? 0) : profile.endTime;
    const fn = keyOf.get(id) ?? { name: '(unknown)', at: '' };
    const key = `${fn.name} ${fn.at}`;
    const entry = self.get(key) ?? { ...fn, us: 0 };
    entry.us += Math.max(0, next - t);
    self.set(key, entry);
  });
  const named = (name: string): number => [...self.values()].filter((f) => f.name === name).reduce((sum, f) => sum + f.us, 0);
  const total = Math.max(1, profile.endTime - profile.startTime);
  const busy = Math.max(1, total - named('(idle)'));
  const pct = (us: number, of = busy): number => Math.round((us / of) * 1000) / 10;
  return {
    duration_ms: Math.round(total / 1000),
    samples: profile.samples.length,
    idle_pct: pct(named('(idle)'), total),
    gc_pct: pct(named('(garbage collector)')),
    top: [...self.values()]
      .filter((f) => f.name !== '(idle)')
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, at: f.at, self_ms: Math.round(f.us / 1000), self_pct: pct(f.us) })),
  };
}

/**
 * Stops a process run with `--cpu-prof --cpu-prof-dir dir` (SIGTERM) and waits up to `timeoutMs`
 * for it to exit, since node writes the profile on exit; copies its profile to `dest`. Gives why
 * not when there is none.
 */
export async function profileAtExit(proc: ChildProcess, dir: string, dest: string, timeoutMs: number): Promise<string | null> {
  if (proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise<boolean>((resolve) => proc.once('exit', () => resolve(true)));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    proc.kill('SIGTERM');
    const done = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (!done) return `it did not exit within ${timeoutMs} ms of SIGTERM`;
  }
  const file = (await readdir(dir).catch(() => [] as string[])).find((f) => f.includes(`.${proc.pid ?? 0}.`) && f.endsWith('.cpuprofile'));
  if (file === undefined) return `it wrote no profile in ${dir}`;
  await copyFile(join(dir, file), dest);
  return null;
}
