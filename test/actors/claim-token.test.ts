import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { Harness } from './harness.ts';

// claimToken-1.lua and clearDetach-1.lua called directly, as the outbox settler calls them.
const d = await deployment(t);
const h = new Harness(d.env);
t.teardown(() => h.close());
/** The owed detaches a claim returns, as user -> registered_at. */
const owed = (flat: string[]) => Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]])));
const key = (token: string) => h.topology.token(d.project.project_id, 'EMAIL', token);

t.test('the newest registration wins and every displaced user is owed a detach until it is cleared', async (t) => {
  const k = key('a@example.com');
  t.same(await h.redis.claimToken(k, 'u1', 100), [], 'first registration: nothing owed');
  t.same(await h.redis.claimToken(k, 'u1', 100), [], 'replayed: still nothing');
  t.same(await h.redis.claimToken(k, 'u2', 200), ['u1', '200'], 'u1 is owed a detach up to u2’s registration');
  t.same(await h.redis.claimToken(k, 'u2', 200), ['u1', '200'], 'a replay before clearing owes it again');
  t.same(owed(await h.redis.claimToken(k, 'u3', 300)), { u1: '200', u2: '300' }, 'a later claim keeps what is owed');
  t.equal(await h.redis.clearDetach(k, 'u1', '200'), 1);
  t.equal(await h.redis.clearDetach(k, 'u1', '200'), 0, 'clearing twice is harmless');
  t.same(owed(await h.redis.claimToken(k, 'u1', 150)), { u1: '300', u2: '300' }, 'an older registration loses to the owner');
  t.equal(await h.redis.clearDetach(k, 'u2', '200'), 0, 'a raised value is not cleared by an old one');
  t.same(await h.redis.hmget(k, 'owner', 'registered_at'), ['u3', '300']);
});

t.test('equal registration times: the owner already recorded keeps the token', async (t) => {
  const k = key('tie@example.com');
  await h.redis.claimToken(k, 'u1', 500);
  t.same(await h.redis.claimToken(k, 'u2', 500), ['u2', '500']);
  t.equal(await h.redis.hget(k, 'owner'), 'u1');
});

t.test('a user that wins back a token is no longer owed a detach for it', async (t) => {
  const k = key('back@example.com');
  await h.redis.claimToken(k, 'u1', 100);
  await h.redis.claimToken(k, 'u2', 200);
  t.same(await h.redis.claimToken(k, 'u1', 300), ['u2', '300']);
});
