import { createHmac } from 'node:crypto';
import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { subscriptionId } from '../../engine/state/users/subscription-ids.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import type { StoredSubscription } from '../../schemas/state.ts';
import { deployment } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { testRedis } from '../helpers/redis.ts';
import { writeUserRecord } from '../helpers/user-record.ts';
import { entriesOf } from './support.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

const identityError = { code: 'identity_verification_failed', message: 'identity_hash is missing or does not match external_id.' };

// One gateway for the file; each test has a project of its own.
const d = await deployment(t);
const gw = await d.start(['gateway']);

t.test('identity verification: body, header and per-op hashes for SDK keys; REST keys skip it', async (t) => {
  const p = await d.createProject({ identityVerification: true });
  const sdk = p.sdk_key;
  const hash = (id: string) => createHmac('sha256', p.identity_secret).update(id).digest('hex');
  const users = `${gw.url}/api/sdk/users`;

  t.same((await call(users, 'POST', sdk, { external_id: 'ada' })).body, { errors: [identityError] }, 'missing in the body');
  t.equal((await call(users, 'POST', sdk, { external_id: 'ada' })).status, 401);
  t.equal((await call(users, 'POST', sdk, { external_id: 'ada', identity_hash: hash('bob') })).status, 401, 'hash of another user');
  t.equal((await call(users, 'POST', sdk, { external_id: 'ada', identity_hash: hash('ada') })).status, 202);
  t.equal((await call(users, 'POST', p.rest_key, { external_id: 'ada' })).status, 202, 'REST key: no check');

  const tags = `${gw.url}/api/sdk/users/ada/tags`;
  t.equal((await call(tags, 'PUT', sdk, { a: 1 })).status, 401, 'header missing');
  t.equal((await call(tags, 'PUT', sdk, { a: 1 }, { 'x-identity-hash': hash('bob') })).status, 401, 'header wrong');
  t.equal((await call(tags, 'PUT', sdk, { a: 1 }, { 'x-identity-hash': hash('ada') })).status, 202, 'header right');
  const event = { external_id: 'ada', name: 'e' };
  t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', sdk, event)).status, 401);
  t.equal((await call(`${gw.url}/api/sdk/events`, 'POST', sdk, event, { 'x-identity-hash': hash('ada') })).status, 202);
  const consent = { external_id: 'ada', subscription_type: 'EMAIL' };
  t.equal((await call(`${gw.url}/api/sdk/opt-out`, 'POST', sdk, consent)).status, 401, 'opt-out needs the header too');
  t.equal((await call(`${gw.url}/api/sdk/opt-out`, 'POST', sdk, consent, { 'x-identity-hash': hash('ada') })).status, 200);

  const batch = await call(`${gw.url}/api/sdk/batch`, 'POST', sdk, {
    operations: [
      { op: 'event', external_id: 'ada', name: 'x', identity_hash: hash('ada') },
      { op: 'event', external_id: 'bob', name: 'x' },
    ],
  });
  t.same([batch.status, batch.body], [
    401,
    {
      errors: [
        {
          code: 'identity_verification_failed',
          message: 'operations/1/identity_hash: missing or does not match external_id',
          path: '/operations/1/identity_hash',
        },
      ],
    },
  ]);
  const good = await call(`${gw.url}/api/sdk/batch`, 'POST', sdk, {
    operations: [{ op: 'event', external_id: 'bob', name: 'x', identity_hash: hash('bob') }],
  });
  t.equal(good.status, 202);
  const logged = JSON.stringify(gw.logs);
  t.notOk(logged.includes(hash('ada')) || logged.includes(hash('bob')), 'no identity hash in the log');
  const written = JSON.stringify(await entriesOf(d.prefix, p.project_id, 'bob'));
  t.notOk(written.includes('identity_hash'), 'no identity hash in the ingest log');

  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  await new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)).setIdentityVerification(p.project_id, false);
  await eventually('identity verification off', async () => ((await call(tags, 'PUT', sdk, { a: 2 })).status === 202 ? true : undefined), 5000);
});

t.test('a revoked key is refused within 5 seconds', async (t) => {
  const p = await d.createProject();
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
  const key = await keystore.createKey(p.project_id, 'sdk');
  t.equal((await call(`${gw.url}/api/sdk/users`, 'POST', key, { external_id: 'x' })).status, 202, 'the new key works (and is cached)');
  t.ok(await keystore.revokeKey(key));
  const answer = await eventually(
    'revocation seen',
    async () => {
      const res = await call(`${gw.url}/api/sdk/users`, 'POST', key, { external_id: 'x' });
      return res.status === 202 ? undefined : res;
    },
    5000,
  );
  t.same([answer.status, answer.body], [401, { errors: [{ code: 'invalid_key', message: 'The key is unknown or revoked.' }] }]);
});

t.test('GET /api/users/{external_id} shows the stored state; 404 unknown, 403 SDK key', async (t) => {
  const p = await d.createProject();
  const rest = p.rest_key;
  const project = p.project_id;
  const topology = new Topology(d.prefix, 8);
  const redis = testRedis();
  t.teardown(() => redis.disconnect());
  // The partition actor writes these (end-to-end coverage lives in test/e2e); here the documented layout is written directly.
  const t0 = Date.parse('2026-11-22T10:00:00.000Z');
  const sub = (type: StoredSubscription['type'], token: string, extra: Partial<StoredSubscription>): StoredSubscription => ({
    type,
    token,
    state: 'live',
    created_at: t0,
    updated_at: t0 + 5,
    registered_at: t0,
    ...extra,
  });
  await writeUserRecord(redis, topology.own(UserKeys).user(project, 'ada'), {
    created_at: t0,
    updated_at: t0 + 9,
    tags: { level: 'n4', plan: 'spro', zip: 's01234' },
    subs: [
      sub('IOS_PUSH', `${'ab'.repeat(32)}9f3e`, { device_model: 'iPhone15,2', device_os: '18.1', app_version: '2.4.0', registered_at: t0 + 1 }),
      sub('EMAIL', 'ada@example.com', { state: 'retired' }),
    ],
    consent: { SMS: { opted_out: true, at: t0 + 3 } },
  });

  const user = await call(`${gw.url}/api/users/ada`, 'GET', rest);
  t.equal(user.status, 200);
  t.same(user.body, {
    external_id: 'ada',
    tags: { level: 4, plan: 'pro', zip: '01234' },
    subscriptions: [
      { id: subscriptionId(project, 'EMAIL', 'ada@example.com'), type: 'EMAIL', token_tail: '….com', device_model: null, device_os: null, app_version: null, state: 'retired', updated_at: '2026-11-22T10:00:00.005Z' },
      {
        id: subscriptionId(project, 'IOS_PUSH', `${'ab'.repeat(32)}9f3e`),
        type: 'IOS_PUSH',
        token_tail: '…9f3e',
        device_model: 'iPhone15,2',
        device_os: '18.1',
        app_version: '2.4.0',
        state: 'live',
        updated_at: '2026-11-22T10:00:00.005Z',
      },
    ],
    consent: { SMS: { opted_out: true, at: '2026-11-22T10:00:00.003Z' } },
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.009Z',
  });

  const missing = await call(`${gw.url}/api/users/nobody`, 'GET', rest);
  t.same([missing.status, missing.body], [404, { errors: [{ code: 'not_found', message: 'Not found.' }] }]);
  const sdk = await call(`${gw.url}/api/users/ada`, 'GET', p.sdk_key);
  t.same([sdk.status, sdk.body], [403, { errors: [{ code: 'wrong_key_type', message: 'This surface needs a REST key.' }] }]);
  t.equal((await call(`${gw.url}/api/users/ada`, 'GET', null)).status, 401);
  t.equal((await call(`${gw.url}/api/users/ada`, 'GET', 'rest_revoked')).status, 401);
  const post = await call(`${gw.url}/api/users/ada`, 'POST', rest, {});
  t.same([post.status, post.headers.get('allow')], [405, 'GET']);
});
