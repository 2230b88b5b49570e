import { randomUUID } from 'node:crypto';
import * as OneSignal from '@onesignal/node-onesignal';
import t from 'tap';
import { register, stage, until } from '../helpers/broadcast.ts';
import { call } from '../helpers/http.ts';

/**
 * OneSignal's official Node client, pointed at the engine by its base URL and given the REST key
 * (docs/api.md#moving-from-onesignal): it creates, views and cancels notifications, and the
 * simulators receive what it sent.
 */

const s = await stage(t);
await register(s, 5);
const project = s.d.project.project_id;
const client = new OneSignal.DefaultApi(OneSignal.createConfiguration({ restApiKey: s.rest, baseServer: new OneSignal.ServerConfiguration(`${s.engine.url}/api`, {}) }));

t.test('create by aliases, then view: the APNs simulator gets the message', async (t) => {
  const n = new OneSignal.Notification();
  n.app_id = project;
  n.include_aliases = { external_id: ['u0'] };
  n.target_channel = 'push';
  n.headings = { en: 'Hello' };
  n.contents = { en: 'From the official client' };
  n.ios_sound = 'ping.aiff';
  const created = await client.createNotification(n);
  t.match(created.id, /^[0-9a-f-]{36}$/);

  await until(s, created.id ?? '');
  const sent = (await s.sims.apns.requests()).filter((r) => r.path.endsWith(`/${s.tokens.get('u0') ?? ''}`));
  t.equal(sent.length, 1, 'one push to u0');
  t.match(sent[0]?.body, { aps: { alert: { title: 'Hello', body: 'From the official client' } } });

  const view = await client.getNotification(project, created.id ?? '');
  t.match(view, { id: created.id, successful: 1, failed: 0, errored: 0, remaining: 0, canceled: false });
});

t.test('create by segment with send_after, then cancel: nothing is sent', async (t) => {
  const n = new OneSignal.Notification();
  n.app_id = project;
  n.included_segments = ['Subscribed Users'];
  n.contents = { en: 'Later' };
  n.send_after = new Date(Date.now() + 3_600_000).toUTCString();
  const created = await client.createNotification(n);
  const id = created.id ?? '';
  const before = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body;
  t.match(before, { status: 'scheduled' });

  const canceled = await client.cancelNotification(project, id);
  t.equal(canceled.success, true);
  const after = await client.getNotification(project, id);
  t.match(after, { canceled: true, successful: 0, remaining: 0 });
  t.match((await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body, { status: 'canceled' });
});

t.test("another app's id is refused with 403, and the key's project is untouched", async (t) => {
  const n = new OneSignal.Notification();
  n.app_id = randomUUID();
  n.include_aliases = { external_id: ['u0'] };
  n.contents = { en: 'Not mine' };
  await t.rejects(client.createNotification(n), { code: 403 });
  const listed = (await call(`${s.engine.url}/api/notifications?limit=100`, 'GET', s.rest)).body as { notifications: { id: string; status: string }[] };
  t.equal(listed.notifications.length, 2, 'only the two notifications above exist');
  const done = listed.notifications.find((v) => v.status === 'completed')?.id ?? '';
  await t.rejects(client.getNotification(randomUUID(), done), { code: 403 });
  await t.rejects(client.cancelNotification(randomUUID(), done), { code: 403 });
  t.match((await call(`${s.engine.url}/api/notifications/${done}`, 'GET', s.rest)).body, { status: 'completed', canceled: false });
});
