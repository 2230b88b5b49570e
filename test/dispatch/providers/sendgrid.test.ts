import t from 'tap';
import { SendGridClient } from '../../../actors/dispatch/providers/sendgrid.ts';
import { startSimulators } from '../../../simulators/index.ts';
import { message } from './helpers.ts';

const sims = await startSimulators();
t.teardown(() => sims.close());
t.beforeEach(() => sims.sendgrid.reset());

const email = (token: string) => ({ type: 'EMAIL' as const, token });

t.test('an email is a v3 mail/send with the title as subject and a text/plain body', async (t) => {
  const creds = sims.sendgrid.credentials();
  const sendgrid = new SendGridClient(creds);
  t.teardown(() => sendgrid.close());
  const result = await sendgrid.send(email('ada@example.com'), message());
  t.match(result, { ok: true, providerMessageId: /^[\w-]{22}$/ });
  const [req] = await sims.sendgrid.requests();
  t.equal(req?.status, 202);
  t.equal(req?.headers.authorization, `Bearer ${creds.api_key}`);
  t.same(req?.body, {
    personalizations: [{ to: [{ email: 'ada@example.com' }] }],
    from: { email: creds.from },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: 'World' }],
    custom_args: { notification_id: 'n-1', svc_message_id: 'm-1' },
  });
});

t.test('without a title the subject is the first line of the body', async (t) => {
  const sendgrid = new SendGridClient(sims.sendgrid.credentials());
  t.teardown(() => sendgrid.close());
  t.match(await sendgrid.send(email('ada@example.com'), message({ title: null, body: 'Line one\nLine two' })), { ok: true });
  const [req] = await sims.sendgrid.requests();
  t.match(req?.body, { subject: 'Line one' });
});

t.test('SendGrid answers map to code, action, hint; 429 waits for X-RateLimit-Reset', async (t) => {
  const sendgrid = new SendGridClient(sims.sendgrid.credentials());
  t.teardown(() => sendgrid.close());
  const reset = String(Math.floor(Date.now() / 1000) + 30);
  const errors = { errors: [{ message: 'scripted', field: null, help: null }] };
  const cases: [number, Record<string, string>, object][] = [
    [400, {}, { code: 'sendgrid_400', action: 'FAIL' }],
    [401, {}, { code: 'sendgrid_401', action: 'FAIL', hint: /API key/ }],
    [403, {}, { code: 'sendgrid_403', action: 'FAIL' }],
    [413, {}, { code: 'sendgrid_413', action: 'FAIL' }],
    [429, { 'x-ratelimit-reset': reset }, { code: 'sendgrid_429', action: 'RETRY' }],
    [500, {}, { code: 'sendgrid_500', action: 'RETRY', retryAfterMs: null }],
    [503, { 'retry-after': '9' }, { code: 'sendgrid_503', action: 'RETRY', retryAfterMs: 9000 }],
  ];
  let n = 0;
  for (const [status, headers, expected] of cases) {
    const to = `user${++n}@example.com`;
    await sims.sendgrid.script({ match: { token: to }, respond: { status, headers, body: errors }, times: 1 });
    const r = await sendgrid.send(email(to), message());
    t.match(r, { ok: false, latencyMs: Number, ...expected }, `${status}`);
    if (status === 429 && !r.ok) t.ok(r.retryAfterMs !== null && r.retryAfterMs > 28_000 && r.retryAfterMs <= 30_000, 'X-RateLimit-Reset read as epoch seconds');
  }
});

t.test('an unverified sender (unscripted) is sendgrid_403', async (t) => {
  const sendgrid = new SendGridClient({ ...sims.sendgrid.credentials(), from: 'someone@else.example' });
  t.teardown(() => sendgrid.close());
  t.match(await sendgrid.send(email('ada@example.com'), message()), { ok: false, code: 'sendgrid_403', action: 'FAIL' });
});
