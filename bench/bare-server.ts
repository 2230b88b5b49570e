/**
 * The ceiling of bench/ingest.ts and bench/sdk-ingest.ts: a server that reads each POST body to its
 * end and answers 202 `{"accepted":true}`, doing nothing else. Whatever the gateway does on top
 * (auth, validation, the Redis append) is the difference to this server in the same run.
 * BARE_SERVER picks the server, as HTTP_SERVER does the gateway's: `uws` (uWebSockets.js, the
 * default) or `node` (node:http).
 *
 * Prints `{"msg":"listening","port":N}` once it listens on 127.0.0.1 (port 0: a free one, or
 * BARE_PORT); stops on SIGTERM or SIGINT.
 */
import { createServer } from 'node:http';

const accepted = '{"accepted":true}';
const port = Number(process.env['BARE_PORT'] ?? 0);

/** Listens with uWebSockets.js; resolves with the port and how to stop listening. */
async function uws(): Promise<{ port: number; close(): void }> {
  const uWS = (await import('uWebSockets.js')).default;
  const app = uWS.App().post('/*', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    // Like the gateway, answer only after the whole body arrived.
    res.onData((_chunk, isLast) => {
      if (!isLast || aborted) return;
      res.cork(() => {
        res.writeStatus('202 Accepted').writeHeader('Content-Type', 'application/json').end(accepted);
      });
    });
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', port, (socket) => {
      if (!socket) return reject(new Error('listen failed'));
      resolve({ port: uWS.us_socket_local_port(socket), close: () => uWS.us_listen_socket_close(socket) });
    });
  });
}

/** Listens with node:http, answering as the uWS variant does. */
function node(): Promise<{ port: number; close(): void }> {
  const server = createServer((req, res) => {
    if (req.method !== 'POST') return res.writeHead(404).end();
    req.on('data', () => undefined);
    req.on('end', () => res.writeHead(202, { 'Content-Type': 'application/json', 'Content-Length': accepted.length }).end(accepted));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      resolve({ port: typeof address === 'object' && address !== null ? address.port : port, close: () => server.close() });
    });
  });
}

try {
  const listening = await (process.env['BARE_SERVER'] === 'node' ? node() : uws());
  console.log(JSON.stringify({ msg: 'listening', port: listening.port }));
  const stop = (): void => {
    listening.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} catch (err) {
  console.error(JSON.stringify({ msg: 'listen failed', err: String(err) }));
  process.exit(1);
}
