/**
 * A minimal APNs-shaped peer for bench/broadcast.ts `--peer minimal`, in its own process so that
 * its CPU is neither the engine's nor the bare loop's: cleartext HTTP/2 (h2c, prior knowledge),
 * `POST /3/device/<token>` reads the body and answers 200 with an `apns-id`, after checking the
 * token once against the set of tokens seen (no JWT check, no payload parsing).
 * `GET /count` answers `{"pushes":N,"distinct":M,"duplicates":D,"sessions":S}`; `POST /reset` forgets them, so
 * each measured run counts its own. Logs `{"msg":"listening","port":N}`.
 */
import { randomUUID } from 'node:crypto';
import http2, { type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';

const PREFIX = '/3/device/';
const tokens = new Set<string>();
let pushes = 0;
let duplicates = 0;
/** The connections that carried pushes since the last reset (not those of /count and /reset). */
const sessions = new Set<Http2Session>();

const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
server.on('stream', (stream, headers) => {
  const path = headers[':path'] ?? '';
  if (headers[':method'] === 'GET' && path === '/count') {
    stream.respond({ ':status': 200, 'content-type': 'application/json' });
    stream.end(JSON.stringify({ pushes, distinct: tokens.size, duplicates, sessions: sessions.size }));
    return;
  }
  if (headers[':method'] === 'POST' && path === '/reset') {
    tokens.clear();
    pushes = 0;
    duplicates = 0;
    sessions.clear();
    stream.respond({ ':status': 204 });
    stream.end();
    return;
  }
  if (headers[':method'] !== 'POST' || !path.startsWith(PREFIX)) {
    stream.respond({ ':status': 404 });
    stream.end();
    return;
  }
  const token = path.slice(PREFIX.length);
  pushes += 1;
  if (stream.session) sessions.add(stream.session);
  if (tokens.has(token)) duplicates += 1;
  else tokens.add(token);
  stream.on('error', () => undefined);
  stream.resume();
  stream.on('end', () => {
    const id = headers['apns-id'];
    stream.respond({ ':status': 200, 'apns-id': typeof id === 'string' ? id : randomUUID() });
    stream.end();
  });
});
server.on('sessionError', () => undefined);
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'listening', port: (server.address() as AddressInfo).port }));
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  // Open client sessions keep close() waiting; the bench is done with them.
  setTimeout(() => process.exit(0), 1000).unref();
});
