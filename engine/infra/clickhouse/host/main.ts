import process from 'node:process';
import { startHostServer } from './server.ts';

/**
 * The embedded ClickHouse's own process (./spawn.ts starts it): chDB on the data directory,
 * behind the ClickHouse HTTP interface on a Unix socket, for one password. It reads the password
 * on the first line of standard input (no command line or environment shows it), prints `ready`
 * once it answers, and stops when its parent closes standard input or sends SIGTERM.
 */
const dataPath = process.env['CLICKHOUSE_HOST_DATA'] ?? '';
const socket = process.env['CLICKHOUSE_HOST_SOCKET'] ?? '';
const password = await firstLine();
if (dataPath === '' || socket === '' || password === '') {
  process.stderr.write('clickhouse host: CLICKHOUSE_HOST_DATA, CLICKHOUSE_HOST_SOCKET and a password on standard input are required\n');
  process.exit(2);
}

/** The first line of standard input; the stream stays open, its end stops the host. */
function firstLine(): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const read = (chunk: Buffer): void => {
      text += chunk.toString('utf8');
      const end = text.indexOf('\n');
      if (end < 0) return;
      process.stdin.off('data', read);
      process.stdin.pause();
      resolve(text.slice(0, end));
    };
    process.stdin.on('data', read);
    process.stdin.once('end', () => resolve(''));
  });
}

let server: Awaited<ReturnType<typeof startHostServer>>;
try {
  server = await startHostServer({ dataPath, listen: { path: socket }, password });
} catch (err) {
  process.stderr.write(`clickhouse host: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void server.close().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.stdout.write('ready\n');
