import t from 'tap';
import { deliveriesOf, register, stage, until, type Delivery } from '../helpers/broadcast.ts';
import { runEngine } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';

/**
 * A project's frequency cap, set with the CLI, against the engine and the simulators: two
 * broadcasts racing for the one slot of each user send one between them; the other is recorded
 * `skipped` with `frequency_capped`; ignore_frequency_cap (and OneSignal's enable_frequency_cap:
 * false) bypasses it (docs/api.md#frequency-caps).
 */

const s = await stage(t, undefined, { KEY_CACHE_MS: '0' });
await register(s, 3); // u0 IOS_PUSH, u1 ANDROID_PUSH, u2 WEB_PUSH
const users = ['u0', 'u1', 'u2'];
const project = s.d.project.project_id;

t.test('the CLI sets a cap per channel and refuses a malformed one', async (t) => {
  const update = await runEngine(['project', 'update', project, '--frequency-cap', 'push:1/24h'], s.d.env);
  t.equal(update.code, 0, update.stderr);
  t.match(update.stdout, /frequency cap 1 per 24 h per user for PUSH/);
  const bad = await runEngine(['project', 'update', project, '--frequency-cap', '3 per day'], s.d.env);
  t.equal(bad.code, 2, 'a malformed cap is a usage error');
  t.match(bad.stderr, /--frequency-cap must be/);
});

async function send(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<string> {
  const answer = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: users, contents: { en: 'hi' }, ...body }, headers);
  t.equal(answer.status, 201, JSON.stringify(answer.body));
  return (answer.body as { id: string }).id;
}

/** The delivery record of each user, once the notification is completed and all three are recorded. */
async function recorded(id: string): Promise<Map<string, Delivery>> {
  await until(s, id);
  const records = await eventually(`${id} recorded`, async () => {
    const found = await deliveriesOf(s, id);
    return found.length >= users.length ? found : undefined;
  });
  return new Map(records.map((r) => [r.external_id, r]));
}

t.test('two racing broadcasts: each user gets one, the other is skipped frequency_capped', async (t) => {
  const ids = await Promise.all([send({}), send({})]);
  const [a, b] = await Promise.all(ids.map(recorded));
  for (const user of users) {
    const statuses = [a?.get(user), b?.get(user)].map((r) => `${r?.status}:${r?.error_code ?? ''}`).sort();
    t.same(statuses, ['sent:', 'skipped:frequency_capped'], `${user}: one sent, one capped`);
  }
  const third = await send({});
  t.same([...(await recorded(third)).values()].map((r) => r.error_code), ['frequency_capped', 'frequency_capped', 'frequency_capped'], 'a later one within 24 h is capped');
});

t.test('ignore_frequency_cap and enable_frequency_cap: false bypass the cap', async (t) => {
  const ignoring = await send({ ignore_frequency_cap: true });
  const onesignal = await send({ enable_frequency_cap: false }, { authorization: `Key ${s.rest}` });
  for (const id of [ignoring, onesignal]) {
    t.same([...(await recorded(id)).values()].map((r) => r.status), ['sent', 'sent', 'sent'], `${id}: sent to every user`);
  }
});
