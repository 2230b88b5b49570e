import { createECDH, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Agent, interceptors, request } from 'undici';
import webpush from 'web-push';
import { WebPushClient } from '../../actors/dispatch/providers/webpush.ts';
import { AttemptLog } from '../../actors/webhooks/attempt-log.ts';
import { WebhookHttp } from '../../actors/webhooks/http.ts';
import { EndpointSender } from '../../actors/webhooks/sender.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import type { WebhookAttemptRow } from '../../schemas/webhooks.ts';
import { makeCert } from '../../simulators/tls.ts';
import { message } from '../dispatch/providers/helpers.ts';
import { eventually } from '../helpers/http.ts';
import { localPolicy } from '../helpers/outbound.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';

/**
 * A receiver's redirect is never followed, by the Web Push client or the webhook sender
 * (docs/api.md#outbound-urls): with real sockets on loopback, a first server answers each redirect
 * status with `Location:` a second listener; the second listener sees no connection and the
 * attempt is a failure with that status. Private addresses are allowed here only so the first
 * server, on loopback, can be reached at all: the guard would let the second one through too, so
 * what is shown is that nothing follows a redirect, whatever the guard says of its target.
 */

const STATUSES = [301, 302, 303, 307, 308];

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as AddressInfo).port;
}

/** The listener a redirect points at: it counts connections (of any protocol) and requests, and answers 201. */
const target = {
  connections: 0,
  requests: 0,
  server: createServer((_req, res) => {
    target.requests += 1;
    res.writeHead(201).end();
  }),
};
target.server.on('connection', () => (target.connections += 1));
const targetPort = await listen(target.server);
const location = `http://127.0.0.1:${targetPort}/`;

/** A receiver that answers every request with the status its path's last segment names, and Location. */
const redirected: string[] = [];
const redirect = (req: IncomingMessage, res: ServerResponse): void => {
  req.resume();
  req.on('end', () => {
    redirected.push(`${req.method} ${req.url}`);
    res.writeHead(Number(req.url?.split('/').pop()), { location }).end();
  });
};
const httpPort = await listen(createServer(redirect));
const cert = await makeCert();
t.teardown(() => cert.remove());
const httpsPort = await listen(createHttpsServer({ cert: cert.cert, key: cert.key }, redirect));

t.beforeEach(() => {
  target.connections = 0;
  target.requests = 0;
  redirected.length = 0;
});

t.test('control: a client that follows redirects does reach the second listener', async (t) => {
  const following = new Agent({ connect: { ca: cert.cert } }).compose(interceptors.redirect({ maxRedirections: 2 }));
  t.teardown(() => following.close());
  for (const [i, status] of STATUSES.entries()) {
    const res = await request(`https://127.0.0.1:${httpsPort}/push/${status}`, { method: 'POST', body: '{}', dispatcher: following });
    await res.body.dump();
    t.equal(res.statusCode, 201, `${status} followed to the second listener`);
    t.equal(target.requests, i + 1, 'the second listener got the request');
  }
  t.ok(target.connections > 0, 'over a connection of its own');
});

t.test('the Web Push client does not follow a redirect: the send fails with its status', async (t) => {
  const vapid = webpush.generateVAPIDKeys();
  const push = new WebPushClient({ vapid_public_key: vapid.publicKey, vapid_private_key: vapid.privateKey, subject: 'mailto:ops@example.com' }, { ca: cert.cert, outbound: localPolicy });
  t.teardown(() => push.close());
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const keys = { web_auth: randomBytes(16).toString('base64url'), web_p256: ecdh.getPublicKey().toString('base64url') };
  for (const status of STATUSES) {
    const result = await push.send({ type: 'WEB_PUSH', token: `https://127.0.0.1:${httpsPort}/push/${status}`, ...keys }, message());
    t.match(result, { ok: false, code: `webpush_${status}`, action: 'FAIL', latencyMs: Number }, `${status} is a failed send`);
  }
  t.same(redirected, STATUSES.map((s) => `POST /push/${s}`), 'each push reached the first server once');
  t.equal(target.connections, 0, 'the second listener saw no connection');
});

t.test('the webhook client does not follow a redirect: the POST fails with its status', async (t) => {
  const http = new WebhookHttp(localPolicy, 2000, 4);
  t.teardown(() => http.close());
  for (const status of STATUSES) {
    const result = await http.post(`http://127.0.0.1:${httpPort}/hooks/${status}`, { 'content-type': 'application/json' }, '{}');
    t.same(result, { ok: false, status, latencyMs: result.latencyMs, error: `HTTP ${status}` }, `${status} is a failed POST`);
  }
  t.same(redirected, STATUSES.map((s) => `POST /hooks/${s}`), 'each POST reached the first server once');
  t.equal(target.connections, 0, 'the second listener saw no connection');
});

t.test('the webhook sender records a redirect as a failed attempt and keeps the event queued', async (t) => {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const registry = new WebhookRegistry(redis, new Topology(prefix, 8));
  const rows: WebhookAttemptRow[] = [];
  const log = createLogger('error');
  const attempts = new AttemptLog(async (batch) => void rows.push(...batch), new Metrics(), log);
  const http = new WebhookHttp(localPolicy, 2000, 4);
  t.teardown(() => http.close());
  const senders: EndpointSender[] = [];
  t.teardown(() => Promise.all(senders.map((s) => s.stop())));
  const hooks = new Map<string, number>();
  for (const status of STATUSES) {
    const { id } = await registry.create('p1', { url: `http://127.0.0.1:${httpPort}/hooks/${status}`, events: ['delivery.sent'] });
    hooks.set(id, status);
    await registry.enqueue([{ endpoint: id, key: '', body: JSON.stringify({ id: `evt_${status}`, type: 'delivery.sent', at: new Date().toISOString(), data: {} }) }]);
    const sender = new EndpointSender(id, {
      registry,
      http,
      policy: localPolicy,
      attempts,
      backoff: { baseMs: 60_000, maxMs: 60_000, windowMs: 3_600_000 },
      concurrency: 1,
      queueMax: 100,
      log,
    });
    senders.push(sender);
    sender.start();
  }
  await eventually('an attempt per endpoint', async () => {
    await attempts.flush();
    return rows.length >= STATUSES.length ? true : undefined;
  });
  for (const [id, status] of hooks) {
    const attempt = rows.filter((r) => r.webhook_id === id);
    t.match(attempt, [{ event_id: `evt_${status}`, attempt: 1, status: 'failed', response_code: status, error: `HTTP ${status}` }], `${status}: one failed attempt`);
    const health = (await registry.get('p1', id))?.health;
    t.match(health, { state: 'active', queued: 1, failures_in_row: 1, last_status_code: status, last_error: `HTTP ${status}`, delivered: 0 }, `${status}: failing, the event still queued`);
  }
  t.equal(target.connections, 0, 'the second listener saw no connection');
});
