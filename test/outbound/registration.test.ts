import { createECDH, randomBytes } from 'node:crypto';
import t from 'tap';
import { deployment, runEngine } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';

/**
 * The ranges the guard refuses (docs/api.md#outbound-urls), at registration: a Web Push endpoint
 * through the SDK routes and a webhook URL through the REST route and the CLI are a 400
 * validation_failed naming the field, with the guard's words. The gateway runs with
 * OUTBOUND_ALLOW_PRIVATE=false, as in production.
 */

const d = await deployment(t);
const strict = { OUTBOUND_ALLOW_PRIVATE: 'false' };
const gateway = await d.start(['gateway'], strict);
const sdk = d.project.sdk_key;
const rest = d.project.rest_key;

const ecdh = createECDH('prime256v1');
ecdh.generateKeys();
const sub = (token: string) => ({ type: 'WEB_PUSH', token, web_auth: randomBytes(16).toString('base64url'), web_p256: ecdh.getPublicKey().toString('base64url') });

const refused: [string, RegExp][] = [
  ['https://[64:ff9b::7f00:1]/push/1', /must not point at an IPv4-embedding NAT64 address$/],
  ['https://198.18.0.1/push/1', /must not point at a benchmarking address$/],
  ['https://[2002:a9fe:a9fe::1]/push/1', /must not point at an IPv4-embedding 6to4 address$/],
  ['https://[::ffff:169.254.169.254]/latest', /must not point at an IPv4-mapped address$/],
  ['https://2130706433/push/1', /must not point at a loopback address$/],
  ['https://0x7f.1/push/1', /must not point at a loopback address$/],
  ['https://192.0.0.170/push/1', /must not point at a NAT64 discovery address$/],
];

t.test('a Web Push endpoint in a refused range is a 400 on the SDK routes', async (t) => {
  for (const [token, why] of refused) {
    const answer = await call(`${gateway.url}/api/sdk/users/r1/subscriptions`, 'POST', sdk, sub(token));
    t.match([answer.status, answer.body], [400, { errors: [{ code: 'validation_failed', path: '/token', message: why }] }], token);
  }
  const batch = await call(`${gateway.url}/api/sdk/batch`, 'POST', sdk, {
    operations: [
      { op: 'identify', external_id: 'r1' },
      { op: 'subscribe', external_id: 'r1', ...sub('https://[64:ff9b::a9fe:a9fe]/push/1') },
    ],
  });
  t.match([batch.status, batch.body], [400, { errors: [{ code: 'validation_failed', path: '/operations/1/token', message: /IPv4-embedding NAT64/ }] }], 'in a batch');
  const public6 = await call(`${gateway.url}/api/sdk/users/r1/subscriptions`, 'POST', sdk, sub('https://[2606:4700:4700::1111]/push/1'));
  t.equal(public6.status, 202, 'a public address is taken');
});

t.test('a webhook URL in a refused range is a 400 on the REST route', async (t) => {
  for (const [url, why] of refused) {
    const answer = await call(`${gateway.url}/api/webhooks`, 'POST', rest, { url, events: ['delivery.sent'] });
    t.match([answer.status, answer.body], [400, { errors: [{ code: 'validation_failed', path: '/url', message: why }] }], url);
  }
  const plain = await call(`${gateway.url}/api/webhooks`, 'POST', rest, { url: 'http://198.19.255.255/hook', events: ['delivery.sent'] });
  t.match([plain.status, plain.body], [400, { errors: [{ message: 'url: must not point at a benchmarking address' }] }], 'over http too');
  const accepted = await call(`${gateway.url}/api/webhooks`, 'POST', rest, { url: 'https://198.20.0.1/hook', events: ['delivery.sent'] });
  t.equal(accepted.status, 201, 'the public address next to 198.18.0.0/15 is taken');
});

t.test('a webhook URL in a refused range is refused by `engine webhooks create`', async (t) => {
  const args = (url: string) => ['webhooks', 'create', d.project.project_id, '--url', url, '--events', 'delivery.sent'];
  const [nat64, benchmarking] = await Promise.all([runEngine(args('https://[64:ff9b::7f00:1]/hook'), { ...d.env, ...strict }), runEngine(args('https://198.18.0.1/hook'), { ...d.env, ...strict })]);
  t.same([nat64?.code, /url: must not point at an IPv4-embedding NAT64 address/.test(nat64?.stderr ?? '')], [1, true], nat64?.stderr);
  t.same([benchmarking?.code, /url: must not point at a benchmarking address/.test(benchmarking?.stderr ?? '')], [1, true], benchmarking?.stderr);
});
