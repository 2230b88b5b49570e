import t from 'tap';
import { ownCode } from '../../../schemas/delivery-codes.ts';
import { Breaker } from '../../../actors/dispatch/providers/breaker.ts';
import { failure, type ProviderClient, type PushMessage, type SendResult, type Target } from '../../../actors/dispatch/providers/provider.ts';

/** The breaker's own logic, in front of a client whose answers the test picks one send at a time. */

const target: Target = { type: 'IOS_PUSH', token: 'a'.repeat(64) };
const message: PushMessage = { notificationId: 'n', title: null, body: 'hi', data: {}, priority: 'high', ttlSeconds: 60, collapseId: null, subtitle: null, options: {} };
const sent: SendResult = { ok: true, providerMessageId: 'm', latencyMs: 1 };
const timedOut = failure(ownCode('timeout'), 1000);
const refused = failure({ code: 'apns_400_BadTopic', action: 'FAIL', hint: 'h' }, 3);

class Scripted implements ProviderClient {
  calls = 0;
  constructor(public next: SendResult) {}
  async send(): Promise<SendResult> {
    this.calls++;
    return this.next;
  }
  async close(): Promise<void> {}
}

t.test('opens after `threshold` sends in a row without an answer, then fails at once until the cool-down ends', async (t) => {
  const inner = new Scripted(timedOut);
  const breaker = new Breaker(inner, { threshold: 3, coolDownMs: 200 });
  for (let i = 0; i < 3; i++) t.match(await breaker.send(target, message), { ok: false, code: 'timeout' });
  const paused = await breaker.send(target, message);
  t.match(paused, { ok: false, code: 'provider_unavailable', action: 'RETRY', latencyMs: null });
  t.ok(!paused.ok && (paused.retryAfterMs ?? 0) > 0 && (paused.retryAfterMs ?? 0) <= 200, 'retried once the cool-down is over');
  t.equal(inner.calls, 3, 'no request while open');
});

t.test('after the cool-down one probe goes through at a time; any answer closes the breaker', async (t) => {
  const inner = new Scripted(timedOut);
  const breaker = new Breaker(inner, { threshold: 2, coolDownMs: 50 });
  await breaker.send(target, message);
  await breaker.send(target, message);
  await new Promise((r) => setTimeout(r, 60));
  let release: (r: SendResult) => void = () => undefined;
  inner.send = () => {
    inner.calls++;
    return new Promise<SendResult>((resolve) => (release = resolve));
  };
  const probe = breaker.send(target, message);
  t.match(await breaker.send(target, message), { code: 'provider_unavailable' }, 'a second send while the probe is out fails at once');
  release(refused);
  t.match(await probe, { code: 'apns_400_BadTopic' }, 'the probe gets the answer');
  inner.send = Scripted.prototype.send.bind(inner);
  inner.next = sent;
  t.match(await breaker.send(target, message), { ok: true }, 'a refusal is an answer: the breaker closed');
  t.equal(inner.calls, 4);
});

t.test('a send that got an answer resets the count of sends without one', async (t) => {
  const inner = new Scripted(timedOut);
  const breaker = new Breaker(inner, { threshold: 2, coolDownMs: 1000 });
  await breaker.send(target, message);
  inner.next = sent;
  await breaker.send(target, message);
  inner.next = timedOut;
  await breaker.send(target, message);
  t.match(await breaker.send(target, message), { code: 'timeout' }, 'two in a row only now');
  t.match(await breaker.send(target, message), { code: 'provider_unavailable' });
});
