import t from 'tap';
import type { SubscriptionRef } from '../../engine/state/users/subscription-ids.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { deployment } from '../helpers/engine.ts';
import { Harness } from './harness.ts';

// The token index (claimToken-2.lua, clearDetach-1.lua) called as the outbox settler calls it.
const d = await deployment(t);
const h = new Harness(d.env);
t.teardown(() => h.close());
/** The detaches a claim says are owed, as [user, registered_at] pairs in the record's order. */
const tokens = new TokenIndex(h.redis, h.topology);
const project = d.project.project_id;
const claim = async (k: SubscriptionRef, externalId: string, registeredAt: number) =>
  (await tokens.claim(project, k, externalId, registeredAt, false)).map((o) => [o.externalId, o.registeredAt]);
/** The owed detaches a claim returns, as user -> registered_at. */
const owed = (pairs: string[][]) => Object.fromEntries(pairs);
const clear = (k: SubscriptionRef, externalId: string, registeredAt: string): Promise<boolean> => tokens.cleared(project, k, { externalId, registeredAt });
const key = (token: string): SubscriptionRef => ({ type: 'EMAIL', token });

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
  t.same(await h.tokenEntry(project, k), { owner: 'u3', registered_at: '300', clear: false }, 'still owed: u2');
});

t.test('the entry says when nothing is owed, and a claim then reads no hash of detaches', async (t) => {
  const k = key('mark@example.com');
  await claim(k, 'u1', 100);
  t.equal((await h.tokenEntry(project, k))?.clear, true, 'a first registration owes nothing');
  t.same(await claim(k, 'u2', 200), [['u1', '200']]);
  t.equal((await h.tokenEntry(project, k))?.clear, false, 'a displaced owner is owed a detach');
  t.equal(await clear(k, 'u1', '200'), true);
  t.same(await claim(k, 'u2', 200), [], 'a replay after the detach was sent: nothing owed');
  t.same(await h.tokenEntry(project, k), { owner: 'u2', registered_at: '200', clear: true }, 'the empty hash is marked');
  t.same(await claim(k, 'u2', 250), [], 'a newer registration by the owner');
  t.same(await claim(k, 'u1', 240), [['u1', '250']], 'an older one by another user is owed a detach even after the mark');
  t.equal((await h.tokenEntry(project, k))?.clear, false);
});

t.test('equal registration times: the owner already recorded keeps the token', async (t) => {
  const k = key('tie@example.com');
  await claim(k, 'u1', 500);
  t.same(await claim(k, 'u2', 500), [['u2', '500']]);
  t.equal((await h.tokenEntry(project, k))?.owner, 'u1');
});

t.test('a user that wins back a token is no longer owed a detach for it', async (t) => {
  const k = key('back@example.com');
  await claim(k, 'u1', 100);
  await claim(k, 'u2', 200);
  t.same(await claim(k, 'u1', 300), [['u2', '300']]);
});
