import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { H2Pool } from '../../../actors/dispatch/providers/h2-pool.ts';
import { TransportError } from '../../../actors/dispatch/providers/provider.ts';
import { eventually } from '../../helpers/http.ts';
import { sleep } from './helpers.ts';

/**
 * Cases the provider simulators cannot script: a connection dropped mid-stream, RST_STREAM
 * codes, a stream limit changed mid-session. A clear-text (h2c) server, as an http:// base URL gets.
 */
interface Local {
  url: string;
  /** Paths of the requests that reached a handler, in order. */
  seen: string[];
  sessions: number;
  server: http2.Http2Server;
}

type Handler = (stream: http2.ServerHttp2Stream, path: string, n: number) => void;

async function local(t: Test, handler: Handler, settings: http2.Settings = {}): Promise<Local> {
  const server = http2.createServer({ settings });
  const state: Local = { url: '', seen: [], sessions: 0, server };
  const open = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    state.sessions += 1;
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => undefined);
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const path = String(headers[':path']);
    state.seen.push(path);
    stream.resume();
    stream.on('end', () => handler(stream, path, state.seen.filter((p) => p === path).length));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  );
  return state;
}

const ok = (stream: http2.ServerHttp2Stream, body = 'done'): void => {
  if (stream.closed) return;
  stream.respond({ ':status': 200 });
  stream.end(body);
};

function pool(t: Test, url: string, opts: ConstructorParameters<typeof H2Pool>[1] = {}): H2Pool {
  const p = new H2Pool(url, { timeoutMs: 2000, ...opts });
  t.teardown(() => p.close());
  return p;
}

t.test('h2c: an http:// origin is spoken in clear text and the body is read', async (t) => {
  const srv = await local(t, (stream) => ok(stream, 'hello'));
  const answer = await pool(t, srv.url).request({ ':path': '/a' }, 'x');
  t.match(answer, { status: 200, body: 'hello' });
});

t.test('a connection dropped before the answer: the request is replayed once on a new one', async (t) => {
  const srv = await local(t, (stream, path, n) => (path === '/drop' && n === 1 ? stream.session?.destroy() : ok(stream)));
  const p = pool(t, srv.url);
  const answers = await Promise.all(['/drop', '/b', '/c'].map((path) => p.request({ ':path': path }, '')));
  t.ok(answers.every((a) => a.status === 200));
  t.equal(srv.seen.filter((x) => x === '/drop').length, 2, 'sent twice: lost, then replayed');
  t.ok(srv.sessions >= 2, 'the replay went out on a new connection');
});

t.test('REFUSED_STREAM is replayed; any other reset is connection_error, not replayed', async (t) => {
  const srv = await local(t, (stream, path, n) => {
    if (path === '/refuse' && n === 1) stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    else if (path === '/reset') stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    else ok(stream);
  });
  const p = pool(t, srv.url);
  t.match(await p.request({ ':path': '/refuse' }, ''), { status: 200 });
  t.equal(srv.seen.filter((x) => x === '/refuse').length, 2);
  await t.rejects(p.request({ ':path': '/reset' }, ''), new TransportError('connection_error', ''));
  t.equal(srv.seen.filter((x) => x === '/reset').length, 1, 'a reset after the peer took the request is not replayed');
});

t.test('replays are bounded: a peer that always drops the connection gives connection_error', async (t) => {
  const srv = await local(t, (stream) => stream.session?.destroy());
  const p = pool(t, srv.url, { maxReplays: 2 });
  await t.rejects(p.request({ ':path': '/x' }, ''), new TransportError('connection_error', ''));
  t.equal(srv.seen.length, 3, 'the first send and two replays');
});

t.test('a stream limit raised by a later SETTINGS frame is followed on the same connection', async (t) => {
  const held: http2.ServerHttp2Stream[] = [];
  const srv = await local(t, (stream) => held.push(stream), { maxConcurrentStreams: 2 });
  const p = pool(t, srv.url, { maxSessions: 1 });
  const sends = Array.from({ length: 5 }, (_, i) => p.request({ ':path': `/s${i}` }, ''));
  const stats = (active: number) => eventually(`${active} streams active`, async () => (p.stats().active === active ? p.stats() : undefined));
  t.same(await stats(2), { sessions: 1, active: 2, queued: 3, maxStreams: [2] }, 'two streams used, three wait');
  await sleep(100);
  t.same(p.stats(), { sessions: 1, active: 2, queued: 3, maxStreams: [2] }, 'and no more while the limit holds');
  held[0]?.session?.settings({ maxConcurrentStreams: 10 });
  t.same(await stats(5), { sessions: 1, active: 5, queued: 0, maxStreams: [10] }, 'the waiting three go out once the peer allows 10');
  for (const stream of held) ok(stream);
  t.ok((await Promise.all(sends)).every((a) => a.status === 200));
  t.equal(p.connects, 1);
});

t.test('connect failures do not loop: the queue fails at once and reconnects wait', async (t) => {
  const p = pool(t, 'http://127.0.0.1:1', { reconnectDelayMs: 200 });
  await t.rejects(p.request({ ':path': '/a' }, ''), new TransportError('connection_error', ''));
  await t.rejects(p.request({ ':path': '/b' }, ''), new TransportError('connection_error', ''));
  t.ok(p.connects <= 2, `${p.connects} connects for two requests`);
});

t.test('a request that times out in the queue leaves it', async (t) => {
  const srv = await local(t, () => undefined, { maxConcurrentStreams: 1 });
  const timeoutMs = 300;
  const p = pool(t, srv.url, { maxSessions: 1, timeoutMs });
  const created = Date.now();
  const settled = Promise.allSettled([p.request({ ':path': '/1' }, ''), p.request({ ':path': '/2' }, '')]);
  await eventually('the first request in flight', async () => (srv.seen.length === 1 ? true : undefined));
  // Held until both deadlines have passed, so the first one's timeout frees its slot when the
  // second's is past too. (Freed a millisecond before the second's deadline, the slot may take it,
  // with that millisecond left: allowed, and what made this test depend on the timers' jitter.)
  while (Date.now() < created + timeoutMs + 20) {
    // The event loop is held on purpose: both timers then run in one turn.
  }
  const results = await settled;
  t.same(
    results.map((r) => r.status === 'rejected' && (r.reason as TransportError).kind),
    ['timeout', 'timeout'],
  );
  t.equal(p.stats().queued, 0);
  t.equal(srv.seen.length, 1, 'the queued request never went out');
});
