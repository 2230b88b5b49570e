import t from 'tap';
import type { Change } from '../../schemas/changes.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { testRedis } from '../helpers/redis.ts';

/** Every event and receipt the apply workers wrote for a project, over all partitions, in stream order per partition. */
async function changes(prefix: string, project: string): Promise<Change[]> {
  const redis = testRedis();
  try {
    const topology = new Topology(prefix, 8);
    const all: Change[] = [];
    for (let p = 0; p < topology.partitions; p++) {
      for (const [, fields] of await redis.xrange(topology.changes(p), '-', '+')) all.push(JSON.parse(fields[1] ?? '{}') as Change);
    }
    return all.filter((c) => c.kind !== 'users' && c.project === project);
  } finally {
    redis.disconnect();
  }
}

// Two gateways, one of them applying, for the file; each test has a project of its own.
const d = await deployment(t);
const first = await d.start(['gateway', 'apply']);
const second = await d.start(['gateway']);

t.test('per-user order holds under concurrent writes through two gateways', async (t) => {
  const project = await d.createProject();
  const gateways = [first.url, second.url];
  const users = Array.from({ length: 30 }, (_, i) => `order-${i}`);
  const writes = 15;
  // Each user's writes are sequential (each waits for its 202), alternating gateways; all users run at once.
  await Promise.all(
    users.map(async (user, u) => {
      for (let k = 0; k < writes; k++) {
        const gw = gateways[(u + k) % 2] ?? first.url;
        const tags = await call(`${gw}/api/sdk/users/${user}/tags`, 'PUT', project.sdk_key, { seq: k, last: `w${k}` });
        t.equal(tags.status, 202);
        const event = await call(`${gw}/api/sdk/events`, 'POST', project.sdk_key, { external_id: user, name: 'step', properties: { seq: k } });
        t.equal(event.status, 202);
      }
    }),
  );
  for (const user of users) {
    const state = await eventually(`${user} applied`, async () => {
      const res = await call(`${first.url}/api/users/${user}`, 'GET', project.rest_key);
      const tags = (res.body as { tags?: Record<string, unknown> }).tags;
      return res.status === 200 && tags?.['seq'] === writes - 1 ? tags : undefined;
    });
    t.same(state, { seq: writes - 1, last: `w${writes - 1}` }, `${user}: the last write wins`);
  }
  const seen = new Map<string, number[]>();
  for (const c of await changes(d.prefix, project.project_id)) {
    if (c.kind === 'event') seen.set(c.external_id, [...(seen.get(c.external_id) ?? []), Number(c.properties?.['seq'])]);
  }
  for (const user of users) {
    t.same(seen.get(user), Array.from({ length: writes }, (_, k) => k), `${user}: events applied once each, in order`);
  }
});

t.test('an event retried 50 times with one idempotency key through two gateways is recorded once', async (t) => {
  const project = await d.createProject();
  const keyed = { external_id: 'buyer', name: 'purchase', properties: { amount: 12.5 }, idempotency_key: 'order-7731' };
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) => call(`${(i % 2 ? first : second).url}/api/sdk/events`, 'POST', project.sdk_key, keyed)),
  );
  t.ok(answers.every((a) => a.status === 202), 'every retry is accepted');
  const keyless = { external_id: 'buyer', name: 'view' };
  for (let i = 0; i < 3; i++) t.equal((await call(`${first.url}/api/sdk/events`, 'POST', project.sdk_key, keyless)).status, 202);
  await call(`${second.url}/api/sdk/events`, 'POST', project.sdk_key, { external_id: 'buyer', name: 'done' });
  const events = await eventually('all events applied', async () => {
    const all = (await changes(d.prefix, project.project_id)).filter((c) => c.kind === 'event');
    return all.some((c) => c.kind === 'event' && c.name === 'done') ? all : undefined;
  });
  const purchases = events.filter((c) => c.kind === 'event' && c.name === 'purchase');
  t.equal(purchases.length, 1, 'the keyed event is recorded exactly once');
  t.match(purchases[0], { idempotency_key: 'order-7731', properties: { amount: 12.5 } });
  t.equal(events.filter((c) => c.kind === 'event' && c.name === 'view').length, 3, 'without a key each retry is recorded');
});
