import process from 'node:process';
import { startHostServer } from './server.ts';

/**
 * The embedded ClickHouse's own process (./spawn.ts starts it): chDB on the data directory,
 * behind the ClickHouse HTTP interface on a Unix socket, for one password. It prints `ready` once
 * it answers, and stops when its parent closes standard input or sends SIGTERM. Its settings come
 * in the environment, the password too, so that no command line shows it.
 */
const dataPath = process.env['CLICKHOUSE_HOST_DATA'] ?? '';
const socket = process.env['CLICKHOUSE_HOST_SOCKET'] ?? '';
const password = process.env['CLICKHOUSE_HOST_PASSWORD'] ?? '';
delete process.env['CLICKHOUSE_HOST_PASSWORD'];
if (dataPath === '' || socket === '' || password === '') {
  process.stderr.write('clickhouse host: CLICKHOUSE_HOST_DATA, CLICKHOUSE_HOST_SOCKET and CLICKHOUSE_HOST_PASSWORD are required\n');
  process.exit(2);
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
