/**
 * The ceiling of bench/ingest.ts: a uWebSockets.js server that reads each POST body to its end and
 * answers 202 `{"accepted":true}`, doing nothing else. Whatever the gateway does on top (auth,
 * validation, the Redis append) is the difference to this server in the same run.
 *
 * Prints `{"msg":"listening","port":N}` once it listens on 127.0.0.1 (port 0: a free one, or
 * BARE_PORT); stops on SIGTERM or SIGINT.
 */
import uWS from 'uWebSockets.js';

const accepted = '{"accepted":true}';

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

app.listen('127.0.0.1', Number(process.env['BARE_PORT'] ?? 0), (socket) => {
  if (!socket) {
    console.error(JSON.stringify({ msg: 'listen failed' }));
    process.exit(1);
  }
  console.log(JSON.stringify({ msg: 'listening', port: uWS.us_socket_local_port(socket) }));
  const stop = (): void => {
    uWS.us_listen_socket_close(socket);
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
});
