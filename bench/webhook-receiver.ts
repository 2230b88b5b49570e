/**
 * A fast local webhook receiver for bench/webhooks.ts, in its own process so that its CPU is
 * neither the engine's nor the benchmark's: answers every POST 204 at once and counts the distinct
 * event ids it got; GET /count answers `{"events":N,"posts":M}`. Logs `{"msg":"listening","port":N}`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const ids = new Set<string>();
let posts = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ events: ids.size, posts }));
    return;
  }
  posts += 1;
  const id = req.headers['webhook-id'];
  if (typeof id === 'string') ids.add(id);
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'listening', port: (server.address() as AddressInfo).port }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
