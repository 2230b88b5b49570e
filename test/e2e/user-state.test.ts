import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';

const iosToken = 'a'.repeat(60) + 'b9f3';

t.test('buffered writes become the user state GET /api/users shows; consent survives re-registration', async (t) => {
  const d = await deployment(t);
  const engine = await d.start(['gateway', 'apply']);
  const sdk = d.project.sdk_key;
  const url = engine.url;

  const optOut = await call(`${url}/api/sdk/opt-out`, 'POST', sdk, { external_id: 'ada', subscription_type: 'IOS_PUSH' });
  t.equal(optOut.status, 200, 'opt-out before the user exists is kept');
  t.match(optOut.body, { external_id: 'ada', subscription_type: 'IOS_PUSH', opted_out: true, at: String });

  t.equal((await call(`${url}/api/sdk/users`, 'POST', sdk, { external_id: 'ada', tags: { level: 3, plan: 'pro', gone: 'x' } })).status, 202);
  t.equal((await call(`${url}/api/sdk/users/ada/tags`, 'PUT', sdk, { gone: '', level: 4, language: 'pt-BR' })).status, 202);
  const sub = { type: 'IOS_PUSH', token: iosToken, device_model: 'iPhone15,2', device_os: '18.1', app_version: '2.4.0' };
  t.equal((await call(`${url}/api/sdk/users/ada/subscriptions`, 'POST', sdk, sub)).status, 202);

  const user = await eventually('state applied', async () => {
    const res = await call(`${url}/api/users/ada`, 'GET', d.project.rest_key);
    const body = res.body as { subscriptions?: unknown[] };
    return res.status === 200 && body.subscriptions?.length === 1 ? body : undefined;
  });
  t.match(user, {
    external_id: 'ada',
    tags: { level: 4, plan: 'pro', language: 'pt-BR' },
    subscriptions: [{ type: 'IOS_PUSH', token_tail: '…b9f3', device_model: 'iPhone15,2', device_os: '18.1', app_version: '2.4.0', state: 'live' }],
    consent: { IOS_PUSH: { opted_out: true } },
    created_at: String,
    updated_at: String,
  });
  t.notOk('gone' in (user as { tags: Record<string, unknown> }).tags, 'an empty tag value deletes the tag');
  t.equal(typeof (user as { tags: Record<string, unknown> }).tags['level'], 'number', 'numbers stay numbers');

  const optIn = await call(`${url}/api/sdk/opt-in`, 'POST', sdk, { external_id: 'ada', subscription_type: 'IOS_PUSH' });
  t.equal(optIn.status, 200);
  t.match(optIn.body, { opted_out: false });
  const after = await call(`${url}/api/users/ada`, 'GET', d.project.rest_key);
  t.match(after.body, { consent: { IOS_PUSH: { opted_out: false } } }, 'only opt-in lifts an opt-out');
});
