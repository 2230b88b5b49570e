import t from 'tap';
import { deliveriesOf, iosToken, register, stage, until, type Delivery } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';

/**
 * Re-drive from the delivery records (docs/api.md#re-drive): after APNs refused some users, a
 * re-drive filtered by that error code sends the same content to exactly those users, as a new
 * notification linked to the first; a repeat with its idempotency key answers the same.
 */

const s = await stage(t);
await register(s, 20); // u0, u5, u10, u15: IOS_PUSH
const ios = ['u0', 'u5', 'u10', 'u15'];
const refused = ['u15', 'u5']; // sorted

/** Every record of `id`, once `count` are there. */
async function records(id: string, count: number): Promise<Delivery[]> {
  await until(s, id);
  return eventually(`${count} records of ${id}`, async () => {
    const found = await deliveriesOf(s, id);
    return found.length >= count ? found : undefined;
  });
}

const redrive = (id: string, body: Record<string, unknown>) => call(`${s.engine.url}/api/notifications/${id}/redrive`, 'POST', s.rest, body);

t.test('a re-drive by error code reaches exactly the users the provider refused', async (t) => {
  for (const user of refused) {
    const i = Number(user.slice(1));
    await s.sims.apns.script({ match: { token: iosToken(i) }, respond: { status: 413, body: { reason: 'PayloadTooLarge' } }, times: 1 });
  }
  const first = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: ios, headings: { en: 'Sale' }, contents: { en: 'Today only' }, data: { promo: 7 } });
  t.equal(first.status, 201, JSON.stringify(first.body));
  const firstId = (first.body as { id: string }).id;
  const attempts = await records(firstId, ios.length);
  t.same(attempts.filter((r) => r.status === 'failed').map((r) => r.external_id).sort(), refused, 'APNs refused two users');

  const again = await redrive(firstId, { error_code: 'apns_413_PayloadTooLarge', status: 'failed', idempotency_key: 'redrive-1' });
  t.equal(again.status, 201, JSON.stringify(again.body));
  const created = again.body as { id: string; recipients: number; redrive_of: string };
  t.match(created, { redrive_of: firstId, recipients: 2 });
  const resent = await records(created.id, refused.length);
  t.same(resent.map((r) => `${r.external_id}:${r.status}`).sort(), refused.map((u) => `${u}:sent`), 'the refused users, sent');
  const received = (await s.sims.apns.requests()).filter((r) => JSON.stringify(r.body).includes(created.id));
  t.equal(received.length, refused.length, 'APNs got the re-drive for those users only');
  t.match(received[0]?.body, { aps: { alert: { title: 'Sale', body: 'Today only' } }, promo: 7, svc_message_id: created.id }, 'the same content');
  const view = (await call(`${s.engine.url}/api/notifications/${created.id}`, 'GET', s.rest)).body;
  t.match(view, { redrive_of: firstId, status: 'completed', successful: 2 });

  const repeat = await redrive(firstId, { error_code: 'apns_413_PayloadTooLarge', status: 'failed', idempotency_key: 'redrive-1' });
  t.equal((repeat.body as { id: string }).id, created.id, 'the same key: the same answer');
  const conflict = await redrive(firstId, { status: 'sent', idempotency_key: 'redrive-1' });
  t.equal(conflict.status, 409, 'the same key with other filters');

  const sentOnes = await redrive(firstId, { status: 'sent', since: new Date(Date.now() - 3_600_000).toISOString() });
  t.match(sentOnes.body, { recipients: 2 }, 'status=sent: the other two');
  const none = await redrive(firstId, { error_code: 'fcm_404_UNREGISTERED' });
  t.match(none.body, { recipients: 0 });
});

t.test('an unknown notification is a 404; a bad filter a 400', async (t) => {
  t.equal((await redrive('no-such-id', {})).status, 404);
  const bad = await redrive('no-such-id', { status: 'lost', colour: 'red' });
  t.equal(bad.status, 400);
});
