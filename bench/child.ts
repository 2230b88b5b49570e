import { spawn, type ChildProcess } from 'node:child_process';

/** A server the benchmark started, listening on 127.0.0.1:port. */
export interface Child {
  name: string;
  port: number;
  proc: ChildProcess;
  /** SIGTERM, then SIGKILL if it has not exited within a few seconds. */
  stop(): Promise<void>;
  /** The last 4 000 characters it wrote (stdout and stderr). */
  output(): string;
}

/**
 * Spawns a server process and resolves once it printed (on stdout or stderr) a JSON log line
 * `{"msg":"listening","port":N}` (unless `listens` is false) and, when `readyMsg` is given, that message too
 * (`readyText`: a plain-text line containing it, for processes that do not log JSON). Rejects when
 * it exits first or does not get there within `timeoutMs`.
 */
export function startChild(
  name: string,
  args: string[],
  env: Record<string, string>,
  opts: { readyMsg?: string; readyText?: string; timeoutMs: number; listens?: boolean },
): Promise<Child> {
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    let port = 0;
    let ready = opts.readyMsg === undefined && opts.readyText === undefined;
    let output = '';
    const fail = (why: string): void => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${name}: ${why}\n${output.slice(-2000)}`)));
    };
    const timer = setTimeout(() => fail(`not listening after ${opts.timeoutMs} ms`), opts.timeoutMs);
    const onLine = (line: string): void => {
      let entry: Record<string, unknown> = {};
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        if (opts.readyText === undefined || !line.includes(opts.readyText)) return;
        ready = true;
      }
      if (entry['msg'] === 'listening' && typeof entry['port'] === 'number') port = entry['port'];
      if (opts.readyMsg !== undefined && entry['msg'] === opts.readyMsg) ready = true;
      if ((port > 0 || opts.listens === false) && ready) {
        clearTimeout(timer);
        proc.removeListener('exit', onExit);
        resolve({ name, port, proc, stop, output: () => output });
      }
    };
    const onExit = (code: number | null): void => fail(`exited with ${code} before it was listening`);
    proc.once('exit', onExit);
    // Keeps reading after start so the child never blocks on a full pipe; only the tail is kept.
    // Log lines come on stderr (the engine's) or stdout (bench/bare-server.ts).
    const reader = (): ((d: Buffer) => void) => {
      let buffered = '';
      return (d) => {
        output = (output + d.toString()).slice(-4000);
        buffered += d.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        lines.forEach(onLine);
      };
    };
    proc.stdout.on('data', reader());
    proc.stderr.on('data', reader());
  });
}
