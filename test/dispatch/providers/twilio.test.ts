import t from 'tap';
import { TwilioClient } from '../../../actors/dispatch/providers/twilio.ts';
import { startSimulators } from '../../../simulators/index.ts';
import { message } from './helpers.ts';

const sims = await startSimulators();
t.teardown(() => sims.close());
t.beforeEach(() => sims.twilio.reset());

const sms = (token: string) => ({ type: 'SMS' as const, token });

t.test('an SMS is a form POST with Basic auth, From and the body alone', async (t) => {
  const creds = sims.twilio.credentials('from');
  const twilio = new TwilioClient(creds, { statusCallback: 'https://engine.example/hooks/twilio' });
  t.teardown(() => twilio.close());
  const result = await twilio.send(sms('+15551234567'), message());
  t.match(result, { ok: true, providerMessageId: /^SM[0-9a-f]{32}$/ });
  const [req] = await sims.twilio.requests();
  t.equal(req?.status, 201);
  t.equal(req?.path, `/2010-04-01/Accounts/${creds.account_sid}/Messages.json`);
  t.equal(req?.headers.authorization, `Basic ${Buffer.from(`${creds.account_sid}:${creds.auth_token}`).toString('base64')}`);
  t.same(req?.body, { To: '+15551234567', From: '+15005550006', Body: 'World', StatusCallback: 'https://engine.example/hooks/twilio' });
});

t.test('a messaging service credential sends MessagingServiceSid instead of From', async (t) => {
  const creds = sims.twilio.credentials('messaging_service');
  const twilio = new TwilioClient(creds);
  t.teardown(() => twilio.close());
  t.match(await twilio.send(sms('+15551234567'), message()), { ok: true });
  const [req] = await sims.twilio.requests();
  t.match(req?.body, { MessagingServiceSid: /^MG/, Body: 'World' });
  t.notOk(req && 'From' in (req.body as object));
});

t.test('Twilio error codes map to code, action and hint', async (t) => {
  const twilio = new TwilioClient(sims.twilio.credentials());
  t.teardown(() => twilio.close());
  const err = (status: number, code: number) => ({ code, message: 'scripted', more_info: `https://www.twilio.com/docs/errors/${code}`, status });
  const cases: [number, unknown, Record<string, string>, object][] = [
    [400, err(400, 21610), {}, { code: 'twilio_21610', action: 'DROP', hint: /STOP/ }],
    [400, err(400, 21614), {}, { code: 'twilio_21614', action: 'DROP' }],
    [401, err(401, 20003), {}, { code: 'twilio_20003', action: 'FAIL' }],
    [429, err(429, 20429), { 'retry-after': '3' }, { code: 'twilio_20429', action: 'RETRY', retryAfterMs: 3000 }],
    [400, err(400, 21999), {}, { code: 'twilio_21999', action: 'FAIL' }],
    [503, 'Service Unavailable', {}, { code: 'twilio_503', action: 'RETRY' }],
  ];
  let n = 0;
  for (const [status, body, headers, expected] of cases) {
    const to = `+1555000${String(++n).padStart(4, '0')}`;
    await sims.twilio.script({ match: { token: to }, respond: { status, body, headers }, times: 1 });
    t.match(await twilio.send(sms(to), message()), { ok: false, latencyMs: Number, ...expected }, JSON.stringify(expected));
  }
});

t.test('an invalid number (unscripted) is twilio_21211 and DROP; bad credentials are twilio_20003', async (t) => {
  const twilio = new TwilioClient(sims.twilio.credentials());
  t.teardown(() => twilio.close());
  t.match(await twilio.send(sms('12345'), message()), { ok: false, code: 'twilio_21211', action: 'DROP' });
  const wrong = new TwilioClient({ ...sims.twilio.credentials(), auth_token: 'wrong' });
  t.teardown(() => wrong.close());
  t.match(await wrong.send(sms('+15551234567'), message()), { ok: false, code: 'twilio_20003', action: 'FAIL', hint: /credential/ });
});

t.test('a slow answer is a timeout; a closed port a connection_error', async (t) => {
  const twilio = new TwilioClient(sims.twilio.credentials(), { timeoutMs: 100 });
  t.teardown(() => twilio.close());
  await sims.twilio.script({ match: { token: '+15559990000' }, respond: { status: 201, delayMs: 400, body: {} }, times: 1 });
  t.match(await twilio.send(sms('+15559990000'), message()), { ok: false, code: 'timeout', action: 'RETRY' });
  const closed = new TwilioClient({ ...sims.twilio.credentials(), base_url: 'http://127.0.0.1:1' });
  t.teardown(() => closed.close());
  t.match(await closed.send(sms('+15551234567'), message()), { ok: false, code: 'connection_error', action: 'RETRY' });
});
