import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';
import { entriesOf, rawRequest } from './support.ts';

const iosToken = 'ab'.repeat(32);

t.test('buffered SDK routes append one entry per write before answering 202', async (t) => {
  const d = await deployment(t);
  const gw = await d.start(['gateway']);
  const sdk = d.project.sdk_key;
  const project = d.project.project_id;
  const before = Date.now();

  t.same(await body(call(`${gw.url}/api/sdk/users`, 'POST', sdk, { external_id: 'ada', tags: { level: 3, plan: 'pro', gone: null } })), [
    202,
    { accepted: true },
  ]);
  t.same(
    await body(call(`${gw.url}/api/sdk/users/ada/subscriptions`, 'POST', sdk, { type: 'IOS_PUSH', token: iosToken, device_os: '18.1' })),
    [202, { accepted: true }],
  );
  const web = { type: 'WEB_PUSH', token: 'https://push.example/abc', web_auth: 'auth', web_p256: 'p256' };
  t.equal((await call(`${gw.url}/api/sdk/users/ada/subscriptions`, 'POST', sdk, web)).status, 202);
  t.equal((await call(`${gw.url}/api/sdk/users/ada/tags`, 'PUT', d.project.rest_key, { level: '', city: 'Lisbon' })).status, 202);
  const ts = '2026-01-02T03:04:05.678Z';
  const event = { external_id: 'ada', name: 'purchase', properties: { amount: 12.5 }, idempotency_key: 'k1', timestamp: ts };
  t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', sdk, event)).status, 202);
  t.equal((await call(`${gw.url}/api/sdk/receipts`, 'POST', sdk, { svc_message_id: 'm1', external_id: 'ada', kind: 'opened' })).status, 202);

  const entries = await entriesOf(d.prefix, project, 'ada');
  t.equal(entries.length, 6, 'one entry per write, all in the user partition');
  t.match(entries, [
    { op: 'identify', project, external_id: 'ada', tags: { level: 'n3', plan: 'spro', gone: '' } },
    { op: 'subscribe', type: 'IOS_PUSH', token: iosToken, device_os: '18.1' },
    { op: 'subscribe', type: 'WEB_PUSH', token: web.token, web_auth: 'auth', web_p256: 'p256' },
    { op: 'tags', tags: { level: '', city: 'sLisbon' } },
    { op: 'event', name: 'purchase', properties: { amount: 12.5 }, idempotency_key: 'k1', ts: Date.parse(ts) },
    { op: 'receipt', svc_message_id: 'm1', kind: 'opened' },
  ]);
  for (const e of entries) t.ok(e.at >= before && e.at <= Date.now(), `${e.op}: at is the accept time`);
  const receipt = entries[5];
  t.ok(receipt?.op === 'receipt' && receipt.ts === receipt.at, 'no timestamp: ts is the accept time');

  const batch = await call(`${gw.url}/api/sdk/batch`, 'POST', sdk, {
    operations: [
      { op: 'identify', external_id: 'bo', tags: { a: 1 } },
      { op: 'subscribe', external_id: 'bo', type: 'SMS', token: '+3519123456789' },
      { op: 'tags', external_id: 'bo', tags: { a: 2 } },
      { op: 'event', external_id: 'bo', name: 'open' },
      { op: 'receipt', external_id: 'bo', svc_message_id: 'm2', kind: 'delivered' },
    ],
  });
  t.same([batch.status, batch.body], [202, { accepted: true, count: 5 }]);
  t.same(
    (await entriesOf(d.prefix, project, 'bo')).map((e) => e.op),
    ['identify', 'subscribe', 'tags', 'event', 'receipt'],
    'batch entries appended in order',
  );

  t.test('an encoded path external_id is decoded', async (t) => {
    t.equal((await call(`${gw.url}/api/sdk/users/a%2Fb%20c/tags`, 'PUT', sdk, { x: 1 })).status, 202);
    t.match(await entriesOf(d.prefix, project, 'a/b c'), [{ op: 'tags', external_id: 'a/b c' }]);
  });
});

t.test('every error status with the exact body, and the process survives the abuse', async (t) => {
  const d = await deployment(t);
  const gw = await d.start(['gateway']);
  const sdk = d.project.sdk_key;
  const users = `${gw.url}/api/sdk/users`;
  const err = (code: string, message: string, path?: string) => ({ errors: [{ code, message, ...(path === undefined ? {} : { path }) }] });

  t.same(await body(call(users, 'POST', null, { external_id: 'x' })), [401, err('missing_key', 'Authorization: Bearer <key> is missing or malformed.')]);
  t.same(await body(call(users, 'POST', null, { external_id: 'x' }, { authorization: 'Digest abc' })), [
    401,
    err('missing_key', 'Authorization: Bearer <key> is missing or malformed.'),
  ]);
  t.same(await body(call(users, 'POST', null, { external_id: 'x' }, { authorization: 'Basic abc' })), [401, err('invalid_key', 'The key is unknown or revoked.')]);
  for (const scheme of ['Key', 'basic', 'BEARER']) {
    const read = await call(`${gw.url}/api/users/nobody`, 'GET', null, undefined, { authorization: `${scheme} ${d.project.rest_key}` });
    t.equal(read.status, 404, `${scheme} <key> is taken: the user is not found`);
  }
  t.same(await body(call(users, 'POST', 'sdk_nope', { external_id: 'x' })), [401, err('invalid_key', 'The key is unknown or revoked.')]);
  t.same(await body(call(`${gw.url}/api/users/x`, 'GET', sdk)), [403, err('wrong_key_type', 'This surface needs a REST key.')]);
  t.same(await body(call(`${gw.url}/api/nothing`, 'GET', sdk)), [404, err('not_found', 'Not found.')]);
  t.same(await body(call(`${gw.url}/`, 'DELETE', null)), [404, err('not_found', 'Not found.')]);

  const wrongMethod = await call(users, 'GET', sdk);
  t.same([wrongMethod.status, wrongMethod.body], [405, err('method_not_allowed', 'Method not allowed.')]);
  t.equal(wrongMethod.headers.get('allow'), 'POST');
  t.equal((await call(`${gw.url}/api/sdk/users/x/tags`, 'POST', sdk, {})).headers.get('allow'), 'PUT');
  t.equal((await call(`${gw.url}/healthz`, 'POST', null, {})).status, 405);

  const text = await fetch(users, { method: 'POST', headers: { authorization: `Bearer ${sdk}`, 'content-type': 'text/plain' }, body: '{}' });
  t.same([text.status, await text.json()], [415, err('unsupported_media_type', 'Content-Type must be application/json.')]);
  const noType = await fetch(users, { method: 'POST', headers: { authorization: `Bearer ${sdk}` }, body: new Blob(['{}']) });
  t.equal(noType.status, 415, 'no Content-Type');
  const latin = await fetch(users, { method: 'POST', headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json; charset=latin1' }, body: '{}' });
  t.equal(latin.status, 415, 'a charset other than UTF-8');
  t.equal((await call(users, 'POST', sdk, { external_id: 'ok' }, { 'content-type': 'Application/JSON; charset=UTF-8' })).status, 202);

  const raw = (bytes: Uint8Array<ArrayBuffer> | string, headers: Record<string, string> = {}) =>
    fetch(users, { method: 'POST', headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json', ...headers }, body: new Blob([bytes]) });
  const bad = await raw('{"external_id": ');
  t.same([bad.status, await bad.json()], [400, err('invalid_json', 'The body is not valid JSON (UTF-8).')]);
  t.equal((await raw('')).status, 400, 'empty body');
  const invalidUtf8 = Buffer.concat([Buffer.from('{"external_id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
  const notUtf8 = await raw(invalidUtf8);
  t.same([notUtf8.status, await notUtf8.json()], [400, err('invalid_json', 'The body is not valid JSON (UTF-8).')], 'invalid UTF-8');
  t.equal((await raw(`{"external_id":"${'x'.repeat(70 * 1024)}"}`)).status, 413, 'body over 64 KiB');

  const big = Buffer.alloc(100 * 1024, 0x20);
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      if (sent === 8) return controller.close();
      controller.enqueue(new Uint8Array(big.subarray(sent * 12800, ++sent * 12800)));
    },
  });
  // No Content-Length: fetch sends a stream body chunked, so the limit is found while streaming.
  const init: RequestInit & { duplex: 'half' } = {
    method: 'POST',
    headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json' },
    body: stream,
    duplex: 'half',
  };
  const chunked = await fetch(users, init);
  t.same([chunked.status, await chunked.json()], [413, err('payload_too_large', 'The body is over the size limit.')], 'chunked body over the limit');

  const declared = await rawRequest(
    gw.port,
    `POST /api/sdk/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${sdk}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{"ext`,
  );
  t.equal(declared.status, 413, 'Content-Length over the limit is refused before the body arrives');
  t.same(JSON.parse(declared.body), err('payload_too_large', 'The body is over the size limit.'));

  const batchOk = { operations: Array.from({ length: 1000 }, (_, i) => ({ op: 'event', external_id: `u${i % 7}`, name: 'e', properties: { pad: 'y'.repeat(200) } })) };
  t.equal((await call(`${gw.url}/api/sdk/batch`, 'POST', sdk, batchOk)).status, 202, 'a batch may exceed 64 KiB');
  const padded = { operations: batchOk.operations.map((o) => ({ ...o, properties: { a: 'y'.repeat(600), b: 'z'.repeat(600) } })) };
  t.equal((await call(`${gw.url}/api/sdk/batch`, 'POST', sdk, padded)).status, 413, 'a batch over 1 MiB');

  t.same(await body(call(users, 'POST', sdk, { external_id: 5, tags: { level: true }, extra: 1 })), [
    400,
    {
      errors: [
        { code: 'validation_failed', message: 'extra: is not allowed', path: '/extra' },
        { code: 'validation_failed', message: 'external_id: must be string', path: '/external_id' },
        { code: 'validation_failed', message: 'tags/level: must be string or number', path: '/tags/level' },
      ],
    },
  ]);
  t.same(await body(call(users, 'POST', sdk, [1])), [400, err('validation_failed', 'body: must be object', '')]);
  t.same(await body(call(users, 'POST', sdk, {})), [400, err('validation_failed', 'external_id: is required', '/external_id')]);
  t.same(await body(call(users, 'POST', sdk, { external_id: '' })), [
    400,
    err('validation_failed', 'external_id: must NOT have fewer than 1 characters', '/external_id'),
  ]);
  t.same(await body(call(`${gw.url}/api/sdk/users/x/subscriptions`, 'POST', sdk, { token: 't' })), [
    400,
    err('validation_failed', 'type: is required', '/type'),
  ]);
  t.same(await body(call(`${gw.url}/api/sdk/users/x/subscriptions`, 'POST', sdk, { type: 'FAX', token: 't' })), [
    400,
    err('validation_failed', 'type: must be one of IOS_PUSH, ANDROID_PUSH, EMAIL, SMS, WEB_PUSH', '/type'),
  ]);
  t.same(await body(call(`${gw.url}/api/sdk/users/x/subscriptions`, 'POST', sdk, { type: 'WEB_PUSH', token: 'https://p.example/1' })), [
    400,
    {
      errors: [
        { code: 'validation_failed', message: 'web_auth: is required', path: '/web_auth' },
        { code: 'validation_failed', message: 'web_p256: is required', path: '/web_p256' },
      ],
    },
  ]);
  const longId = 'x'.repeat(129);
  t.same(await body(call(`${gw.url}/api/sdk/users/${longId}/tags`, 'PUT', sdk, { a: 1 })), [
    400,
    err('validation_failed', 'external_id: must be 1 to 128 characters', '/external_id'),
  ]);
  t.equal((await call(`${gw.url}/api/sdk/users/%E0%A4%A/tags`, 'PUT', sdk, { a: 1 })).status, 400, 'malformed percent-encoding');
  t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', sdk, { external_id: 'x', name: 'n', timestamp: 'yesterday' })).status, 400);
  t.equal((await call(`${gw.url}/api/sdk/receipts`, 'POST', sdk, { external_id: 'x', svc_message_id: 'm', kind: 'liked' })).status, 400);
  t.same(
    await body(
      call(`${gw.url}/api/sdk/batch`, 'POST', sdk, {
        operations: [
          { op: 'identify', external_id: 'fine' },
          { op: 'subscribe', external_id: 'x', type: 'SMS', token: '123' },
          { op: 'opt-out', external_id: 'x' },
        ],
      }),
    ),
    [
      400,
      {
        errors: [
          { code: 'validation_failed', message: 'operations/1/token: must match pattern "^\\+[0-9]{8,15}$"', path: '/operations/1/token' },
          { code: 'validation_failed', message: 'operations/2/op: must be one of identify, subscribe, tags, event, receipt', path: '/operations/2/op' },
        ],
      },
    ],
  );
  t.same(await entriesOf(d.prefix, d.project.project_id, 'fine'), [], 'an invalid batch appends nothing');
  t.equal((await call(`${gw.url}/api/sdk/batch`, 'POST', sdk, { operations: [] })).status, 400);

  const health = await call(`${gw.url}/healthz`, 'GET', null);
  t.equal(health.status, 200, 'still alive after the abuse');
  t.equal(gw.proc.exitCode, null);
  const metrics = await call(`${gw.url}/metrics`, 'GET', null);
  t.match(String(metrics.body), /svc_http_requests_total\{route="\/api\/sdk\/users",status="413"\} \d+/);
  t.match(String(metrics.body), /svc_accepted_writes_total \d+/);
  t.match(String(metrics.body), /svc_ingest_lag_entries 1001/, 'nothing applies yet: the lag is every entry written');
});

async function body(answer: Promise<{ status: number; body: unknown }>): Promise<[number, unknown]> {
  const a = await answer;
  return [a.status, a.body];
}
