import t from 'tap';
import WebSocket from 'ws';
import { routes } from '../../gateway/routes/table.ts';
import type { GatewayDeps } from '../../gateway/server/deps.ts';
import { UnavailableError } from '../../schemas/errors.ts';
import { gatewayWith } from '../helpers/gateway-app.ts';
import { call } from '../helpers/http.ts';

/**
 * A WebSocket upgrade goes through the route pipeline of an HTTP call: the same key check (the key
 * in Authorization or in the subprotocol `bearer.<key>`) and rate limit, with the same answers,
 * before the socket opens.
 */

const parts: Pick<GatewayDeps, 'ingest' | 'clickhouse'> = {
  ingest: { write: () => Promise.resolve() },
  clickhouse: { get: () => Promise.reject(new UnavailableError('no ClickHouse in this test')), ping: () => Promise.resolve(false) },
};

const socketRoutes = routes.filter((r) => r.kind === 'websocket');

interface Refusal {
  status: number;
  retryAfter: string | null;
  body: unknown;
}

/** Opens `url` with the key in a header or as the subprotocol: the refusal, or null when the socket opened (then closed). */
function upgrade(url: string, key: string | null, via: 'header' | 'protocol'): Promise<Refusal | null> {
  const ws =
    via === 'header'
      ? new WebSocket(url, key === null ? {} : { headers: { authorization: `Bearer ${key}` } })
      : new WebSocket(url, key === null ? [] : [`bearer.${key}`]);
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.close();
      resolve(null);
    });
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] ?? null, body: JSON.parse(body) as unknown }));
    });
  });
}

t.test('an upgrade is refused as an HTTP call of the same auth is, the key in a header or the subprotocol', async (t) => {
  const gw = await gatewayWith(t, parts);
  /** A key, and the code that refuses it on a route of each auth (null: it is let in). */
  const keys: [string, string | null, { sdk: string | null; rest: string | null }][] = [
    ['no key', null, { sdk: 'missing_key', rest: 'missing_key' }],
    ['an unknown key', 'sdk_unknown', { sdk: 'invalid_key', rest: 'invalid_key' }],
    ['a key too long to be one', 'k'.repeat(513), { sdk: 'missing_key', rest: 'missing_key' }],
    ['an SDK key', gw.project.sdk_key, { sdk: null, rest: 'wrong_key_type' }],
    ['a REST key', gw.project.rest_key, { sdk: null, rest: null }],
  ];
  t.ok(socketRoutes.some((r) => r.auth === 'sdk') && socketRoutes.some((r) => r.auth === 'rest'), 'the table has WebSocket routes of both auths');
  for (const route of socketRoutes) {
    const same = routes.find((r) => r.kind === 'http' && r.auth === route.auth && !r.path.includes('{'));
    if (same === undefined) throw new Error(`no HTTP route with auth ${route.auth}`);
    for (const [what, key, codes] of keys) {
      const code = codes[route.auth];
      for (const via of ['header', 'protocol'] as const) {
        const refused = await upgrade(`${gw.url.replace('http', 'ws')}${route.path}`, key, via);
        if (code === null) {
          t.equal(refused, null, `${route.path}, ${what} in the ${via}: opens`);
          continue;
        }
        const expected = await call(`${gw.url}${same.path}`, same.method.toUpperCase(), key);
        t.match(expected.body, { errors: [{ code }] }, `${same.method.toUpperCase()} ${same.path}, ${what}: ${code}`);
        t.same(refused, { status: expected.status, retryAfter: null, body: expected.body }, `${route.path}, ${what} in the ${via}: the same answer`);
      }
    }
  }
});

t.test('an upgrade takes a rate-limit token: past the limit it is 429 with Retry-After, and no socket opens', async (t) => {
  const gw = await gatewayWith(t, parts);
  t.equal(await gw.keystore.setRateLimit(gw.project.project_id, { per_second: 0.01, burst: 1 }), true);
  for (const route of socketRoutes) {
    const key = route.auth === 'rest' ? gw.project.rest_key : gw.project.sdk_key;
    const url = `${gw.url.replace('http', 'ws')}${route.path}`;
    t.equal(await upgrade(url, key, 'protocol'), null, `${route.path}: the first upgrade opens`);
    const refused = await upgrade(url, key, 'protocol');
    t.match(refused, { status: 429, retryAfter: /^[1-9]\d*$/, body: { errors: [{ code: 'rate_limited' }] } }, `${route.path}: the second is refused`);
  }
});

t.test('a plain GET on a WebSocket path needs the upgrade, whatever the key', async (t) => {
  const gw = await gatewayWith(t, parts);
  for (const route of socketRoutes) {
    for (const key of [null, gw.project.rest_key]) {
      const plain = await call(`${gw.url}${route.path}`, 'GET', key);
      t.same([plain.status, plain.body], [400, { errors: [{ code: 'validation_failed', message: 'This path needs a WebSocket upgrade (Upgrade: websocket).' }] }], `${route.path}`);
    }
  }
});
