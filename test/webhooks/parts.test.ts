import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { backoffMs } from '../../actors/webhooks/backoff.ts';
import { changeEvents, eventId, outcomeEvents, outcomeSources } from '../../actors/webhooks/events.ts';
import { WebhookHttp } from '../../actors/webhooks/http.ts';
import { retryAfterMs } from '../../engine/infra/outbound/retry-after.ts';
import { orderGroups } from '../../actors/webhooks/sender.ts';
import type { OutcomeEntry } from '../../schemas/outcomes.ts';

/** The webhooks role's parts: backoff, Retry-After, order groups, events from records, the guard at send. */

t.test('backoff doubles to its cap with jitter in the upper half, and honours Retry-After', async (t) => {
  const b = { baseMs: 1000, maxMs: 8000, windowMs: 60_000 };
  t.equal(backoffMs(b, 1, undefined, () => 0), 500);
  t.equal(backoffMs(b, 1, undefined, () => 1), 1000);
  t.equal(backoffMs(b, 3, undefined, () => 1), 4000);
  t.equal(backoffMs(b, 30, undefined, () => 1), 8000, 'capped');
  t.equal(backoffMs(b, 1, 20_000, () => 1), 20_000, 'Retry-After longer than the backoff wins');
  t.equal(backoffMs(b, 1, 3_600_000, () => 1), 60_000, 'but not past the retry window');
});

t.test('Retry-After in seconds or as an HTTP date', async (t) => {
  const now = Date.parse('2026-11-26T10:00:00Z');
  t.equal(retryAfterMs('120', now), 120_000);
  t.equal(retryAfterMs('Thu, 26 Nov 2026 10:00:30 GMT', now), 30_000);
  t.equal(retryAfterMs('soon', now), null);
  t.equal(retryAfterMs(undefined, now), null);
});

t.test('a batch runs in order per notification; events of no notification alone', async (t) => {
  const e = (entry: string, key: string) => ({ entry, key, body: '{}' });
  const groups = orderGroups([e('1', 'a'), e('2', 'b'), e('3', 'a'), e('4', ''), e('5', ''), e('6', 'b')]);
  t.same(
    groups.map((g) => g.map((x) => x.entry)),
    [['1', '3'], ['2', '6'], ['4'], ['5']],
  );
});

const outcome: OutcomeEntry = {
  id: 'o1',
  project: 'p',
  notification_id: 'n1',
  external_id: 'u1',
  channel: 'PUSH',
  subscription_type: 'IOS_PUSH',
  token_tail: '…a9f3',
  attempt: 1,
  status: 'failed',
  error_code: 'apns_410_Unregistered',
  hint: 'retired',
  provider_message_id: null,
  latency_ms: 12,
  retrying: false,
  at: Date.parse('2026-11-26T10:00:00Z'),
};

t.test('a delivery attempt is its delivery event, and a retired token too', async (t) => {
  const events = outcomeEvents('outcomes:{p1}/1-0', outcome);
  t.same(events.map((e) => e.event.type), ['delivery.failed', 'subscription.retired']);
  t.match(events[0]?.event, { at: '2026-11-26T10:00:00.000Z', data: { id: 'o1', notification_id: 'n1', status: 'failed', at: '2026-11-26T10:00:00.000Z' } });
  t.notOk('project' in (events[0]?.event.data ?? {}), 'the project is not in the data');
  t.equal(events[0]?.notification, 'n1', 'ordered with its notification');
  t.same(outcomeEvents('outcomes:{p1}/1-0', outcome).map((e) => e.event.id), events.map((e) => e.event.id), 'read again: the same ids');
  t.not(outcomeEvents('outcomes:{p1}/2-0', outcome)[0]?.event.id, events[0]?.event.id, 'another entry: another id');
  t.same(outcomeEvents('s/1-0', { ...outcome, status: 'sent', error_code: null, hint: null }).map((e) => e.event.type), ['delivery.sent']);
  t.same(outcomeEvents('s/1-0', { ...outcome, error_code: 'timeout', retrying: true }).map((e) => e.event.type), ['delivery.failed'], 'a retried failure retires nothing');
  t.match(eventId('x', 'delivery.sent'), /^evt_[A-Za-z0-9_-]{27}$/);
});

t.test('each outcome of an entry is its own event; the first keeps the id of an entry of one', async (t) => {
  const one = JSON.stringify(outcome);
  const entry = [one, JSON.stringify({ ...outcome, id: 'o2', status: 'sent', error_code: null, hint: null }), JSON.stringify({ ...outcome, id: 'o3' })].join('\n');
  const sources = outcomeSources('outcomes:{p1}/1-0', entry);
  t.same(sources.map((o) => o.source), ['outcomes:{p1}/1-0', 'outcomes:{p1}/1-0/1', 'outcomes:{p1}/1-0/2']);
  t.same(sources.map((o) => (JSON.parse(o.text) as OutcomeEntry).id), ['o1', 'o2', 'o3'], 'each outcome whole, in order');
  const ids = sources.flatMap((o) => outcomeEvents(o.source, JSON.parse(o.text) as OutcomeEntry).map((e) => e.event.id));
  t.equal(new Set(ids).size, ids.length, 'no two events of the entry share an id');
  const alone = outcomeSources('outcomes:{p1}/1-0', one);
  t.same(alone, [{ source: 'outcomes:{p1}/1-0', text: one }], 'an entry of one outcome: its own source');
  t.equal(ids[0], outcomeEvents(alone[0]?.source ?? '', outcome)[0]?.event.id, "the first outcome's event: the id it has alone");
});

t.test('receipts and opt-outs from changes; opt-ins and other changes are no event', async (t) => {
  const receipt = changeEvents('c/1-0', { kind: 'receipt', id: '1-0', project: 'p', external_id: 'u1', svc_message_id: 'n1', receipt: 'clicked', ts: 0 });
  t.match(receipt, [{ notification: 'n1', event: { type: 'receipt.clicked', data: { notification_id: 'n1', external_id: 'u1', kind: 'clicked' } } }]);
  const out = changeEvents('c/2-0', { kind: 'user', project: 'p', external_id: 'u1', consent: { type: 'EMAIL', opted_out: true, at: 5 } });
  t.match(out, [{ notification: '', event: { type: 'user.opted_out', data: { external_id: 'u1', subscription_type: 'EMAIL' } } }]);
  t.same(changeEvents('c/3-0', { kind: 'user', project: 'p', external_id: 'u1', consent: { type: 'EMAIL', opted_out: false, at: 5 } }), []);
  t.same(changeEvents('c/4-0', { kind: 'user', project: 'p', external_id: 'u1' }), []);
  t.same(changeEvents('c/5-0', { kind: 'users', users: [{ project: 'p', external_id: 'u1' }] }), [], "an apply batch's users: no event");
});

t.test('a receiver name that resolves to loopback is refused at send, before any connection', async (t) => {
  let connections = 0;
  const listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  t.teardown(() => listener.close());
  const { port } = listener.address() as AddressInfo;
  const http = new WebhookHttp({ allowPrivate: false, webPushHosts: undefined }, 2000, 4);
  t.teardown(() => http.close());
  const result = await http.post(`http://localhost:${port}/hook`, { 'content-type': 'application/json' }, '{}');
  t.match(result, { ok: false, status: null, error: /EOUTBOUND_REFUSED/ });
  t.equal(connections, 0, 'the listener saw no connection');
});
