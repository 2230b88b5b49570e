import t from 'tap';
import { createProviderClients, closeProviderClients, providerFor, sendTo } from '../../../actors/dispatch/providers/index.ts';
import { rateLimitResetMs, retryAfterMs, transportFailure, TransportError } from '../../../actors/dispatch/providers/provider.ts';
import { startSimulators } from '../../../simulators/index.ts';
import { localPolicy } from '../../helpers/outbound.ts';
import { caOf, deviceToken, message } from './helpers.ts';

t.test('Retry-After is read as delay seconds or an HTTP date', async (t) => {
  const now = Date.parse('2026-11-23T10:00:00Z');
  t.equal(retryAfterMs('120', now), 120_000);
  t.equal(retryAfterMs(' 0 ', now), 0);
  t.equal(retryAfterMs('Mon, 23 Nov 2026 10:00:30 GMT', now), 30_000);
  t.equal(retryAfterMs('Mon, 23 Nov 2026 09:00:00 GMT', now), 0, 'a date in the past is now');
  t.equal(retryAfterMs(['5', '9'], now), 5000);
  t.equal(retryAfterMs(undefined, now), null);
  t.equal(retryAfterMs('soon', now), null);
  t.equal(retryAfterMs('-3', now), null);
  t.equal(rateLimitResetMs(String(now / 1000 + 42), now), 42_000);
  t.equal(rateLimitResetMs('x', now), null);
});

t.test('transport errors become timeout or connection_error; a bug is rethrown', async (t) => {
  t.match(transportFailure(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), 3), { code: 'connection_error', action: 'RETRY', latencyMs: 3 });
  t.match(transportFailure(Object.assign(new Error('slow'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 3), { code: 'timeout', action: 'RETRY' });
  t.match(transportFailure(new TransportError('queue_full', 'full'), 3), { code: 'queue_full', latencyMs: null });
  t.throws(() => transportFailure(new TypeError('undefined is not a function'), 1), TypeError);
});

t.test('each subscription type has its provider', async (t) => {
  t.same(
    (['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH', 'SMS', 'EMAIL'] as const).map(providerFor),
    ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'],
  );
});

t.test('createProviderClients builds the configured clients; a missing one is no_credentials', async (t) => {
  const sims = await startSimulators();
  t.teardown(() => sims.close());
  const clients = createProviderClients(
    { apns: sims.apns.credentials(), fcm: sims.fcm.credentials(), webpush: sims.webpush.credentials(), twilio: sims.twilio.credentials() },
    { ca: caOf(sims), timeoutMs: 5000, outbound: localPolicy },
  );
  t.teardown(() => closeProviderClients(clients));
  t.same(Object.keys(clients).sort(), ['apns', 'fcm', 'twilio', 'webpush']);
  t.match(await sendTo(clients, { type: 'IOS_PUSH', token: deviceToken(1) }, message()), { ok: true });
  t.match(await sendTo(clients, { type: 'ANDROID_PUSH', token: 'tok' }, message()), { ok: true });
  t.match(await sendTo(clients, { type: 'WEB_PUSH', ...sims.webpush.subscription() }, message()), { ok: true });
  t.match(await sendTo(clients, { type: 'SMS', token: '+15551234567' }, message()), { ok: true });
  t.match(await sendTo(clients, { type: 'EMAIL', token: 'ada@example.com' }, message()), { ok: false, code: 'no_credentials', action: 'FAIL', latencyMs: null });
  t.equal((await sims.sendgrid.requests()).length, 0);
});
