import t from 'tap';
import { scripts } from '../../engine/scripts.ts';
import { deployment } from '../helpers/engine.ts';
import { Harness } from './harness.ts';

// claimToken-1.lua and clearDetach-1.lua called directly, as the outbox settler calls them.
const d = await deployment(t);
const h = new Harness(d.env);
t.teardown(() => h.close());
/** The detaches a claim says are owed, as [user, registered_at] pairs in the record's order. */
const claim = async (k: string, externalId: string, registeredAt: number) =>
  (await scripts.claimToken(h.redis, { keys: { token: k }, args: { externalId, registeredAt } })).owed.map((o) => [o.externalId, o.registeredAt]);
/** The owed detaches a claim returns, as user -> registered_at. */
const owed = (pairs: string[][]) => Object.fromEntries(pairs);
const clear = async (k: string, externalId: string, registeredAt: string) =>
  (await scripts.clearDetach(h.redis, { keys: { token: k }, args: { externalId, registeredAt } })).cleared;
const key = (token: string) => h.topology.token(d.project.project_id, 'EMAIL', token);

t.test('the newest registration wins and every displaced user is owed a detach until it is cleared', async (t) => {
  const k = key('a@example.com');
  t.same(await claim(k, 'u1', 100), [], 'first registration: nothing owed');
  t.same(await claim(k, 'u1', 100), [], 'replayed: still nothing');
  t.same(await claim(k, 'u2', 200), [['u1', '200']], 'u1 is owed a detach up to u2’s registration');
  t.same(await claim(k, 'u2', 200), [['u1', '200']], 'a replay before clearing owes it again');
  t.same(owed(await claim(k, 'u3', 300)), { u1: '200', u2: '300' }, 'a later claim keeps what is owed');
  t.equal(await clear(k, 'u1', '200'), true);
  t.equal(await clear(k, 'u1', '200'), false, 'clearing twice is harmless');
  t.same(owed(await claim(k, 'u1', 150)), { u1: '300', u2: '300' }, 'an older registration loses to the owner');
  t.equal(await clear(k, 'u2', '200'), false, 'a raised value is not cleared by an old one');
  t.same(await h.redis.hmget(k, 'owner', 'registered_at'), ['u3', '300']);
});

t.test('equal registration times: the owner already recorded keeps the token', async (t) => {
  const k = key('tie@example.com');
  await claim(k, 'u1', 500);
  t.same(await claim(k, 'u2', 500), [['u2', '500']]);
  t.equal(await h.redis.hget(k, 'owner'), 'u1');
});

t.test('a user that wins back a token is no longer owed a detach for it', async (t) => {
  const k = key('back@example.com');
  await claim(k, 'u1', 100);
  await claim(k, 'u2', 200);
  t.same(await claim(k, 'u1', 300), [['u2', '300']]);
});
