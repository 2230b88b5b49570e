import t from 'tap';
import { WINDOW } from '../../actors/dispatch/role.ts';
import { DISPATCH_GROUP } from '../../engine/infra/redis/topology.ts';
import { ALL_ROLES, register, stage, stageWithoutEngine, until, type Stage } from '../helpers/broadcast.ts';
import { audiences, body, broadcast, checkRecords, excessSends, openState, post, received } from '../helpers/broadcast-audit.ts';
import { call, eventually } from '../helpers/http.ts';
import { TcpSwitch } from '../helpers/tcp-switch.ts';
import { NotificationKeys } from '../../engine/state/notifications/redis-keys.ts';

/**
 * Broadcasts with the roles in three processes, one of them SIGKILLed mid-broadcast and restarted:
 * A = gateway, apply, recorder, scheduler (it holds the embedded ClickHouse), B = fanout,
 * C = dispatch. Users are targeted by id, so the fan-out needs no ClickHouse.
 * docs/reliability.md, "Broadcasts under SIGKILL", says what this proves.
 */

const FRONT = ['gateway', 'apply', 'recorder', 'scheduler'];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('a fan-out process SIGKILLed mid-broadcast and restarted appends every recipient exactly once', async (t) => {
  const setting = await stageWithoutEngine(t);
  const front = await setting.d.start(FRONT);
  const s: Stage = { ...setting, engine: front };
  const { notifications } = openState(t, s);
  const users = 10_000;
  let started = Date.now();
  await register(s, users);
  t.comment(`registered ${users} users in ${Date.now() - started} ms`);
  // The fan-out process waits for the first notification: polling starts as soon as it is
  // accepted, and the process is killed once the first chunk (1000 of its 6000 users) is appended.
  // It reaches Redis through a switch in this process, cut the moment the first chunk shows: the
  // fan-out cannot append more while this process, however long it waits for the CPU, looks.
  const redisAt = new URL(s.d.env['REDIS_URL'] ?? '');
  const cable = await TcpSwitch.start({ host: redisAt.hostname, port: Number(redisAt.port || 6379) });
  t.teardown(() => cable.close());
  const fanout = await s.d.start(['fanout'], { REDIS_URL: `redis://127.0.0.1:${cable.port}${redisAt.pathname}` });
  const [push, ...others] = audiences(users);
  const first = await post(s, ...(push as [string, string[]]));
  const deadline = Date.now() + 60_000;
  while ((await notifications.read(first.id))?.cursor === '') {
    if (Date.now() > deadline) throw new Error('the fan-out never started');
  }
  cable.switchOff();
  await fanout.kill();
  // Accepted while no fan-out runs: the restarted one resumes the first after 2 × LEASE_MS idle.
  const sent = [first];
  for (const [channel, audience] of others) sent.push(await post(s, channel, audience));
  t.same(sent.map((n) => n.recipients), [6_000, 2_000, 2_000], 'every targeted user is a recipient');
  const progress = await Promise.all(sent.map(async (n) => ({ fanned: (await notifications.read(n.id))?.fanned ?? false, jobs: (await notifications.counts(n.id)).jobs })));
  t.comment(`at the kill: jobs appended ${JSON.stringify(progress)}`);
  t.notOk(progress[0]?.fanned, 'the kill landed before the first notification was fanned out');
  t.ok((progress[0]?.jobs ?? 0) > 0 && (progress[0]?.jobs ?? 0) < first.recipients, 'the kill landed mid-fan-out: some of its jobs appended, not all');

  // Dispatch starts only now: the simulators run in this process, and their work would slow the
  // polling above enough for the kill to land late.
  await Promise.all([s.d.start(['fanout']), s.d.start(['dispatch'])]);
  started = Date.now();
  const attempts = await checkRecords(t, s, notifications, sent);
  t.comment(`completed and checked in ${Date.now() - started} ms after the restart`);
  const excess = excessSends(t, s, sent, await received(s.sims), attempts);
  t.equal(excess, 0, 'no send beyond the attempts recorded: each recipient got exactly one job (dispatch was not killed)');
});

t.test('a dispatch process SIGKILLed mid-broadcast and restarted: nobody skipped, one record per attempt, duplicates within its window', async (t) => {
  const setting = await stageWithoutEngine(t);
  const front = await setting.d.start(FRONT);
  const s: Stage = { ...setting, engine: front };
  await s.d.start(['fanout']);
  const { redis, topology, notifications } = openState(t, s);
  const partitions = Number(s.d.env['PARTITIONS']);
  // A dispatch worker runs the jobs of at most WINDOW users at once per partition it owns (a
  // sliding window, actors/dispatch/dispatch-consumer.ts); the only worker owns all of them.
  const window = WINDOW * partitions;
  const users = 3000;
  await register(s, users);

  // FCM, Twilio and SendGrid answer success after 400 ms, so sends are in flight when the kill lands.
  const delayMs = 400;
  await s.sims.fcm.script({ match: { path: 'messages:send' }, respond: { status: 200, body: { name: 'projects/demo-project/messages/slow' }, delayMs } });
  await s.sims.twilio.script({ match: { path: '/Messages.json' }, respond: { status: 201, body: { sid: 'SMslow', status: 'queued' }, delayMs } });
  await s.sims.sendgrid.script({ match: { path: '/v3/mail/send' }, respond: { status: 202, headers: { 'x-message-id': 'slow' }, delayMs } });

  const sent = await broadcast(s, users);
  const total = sent.reduce((sum, n) => sum + n.recipients, 0);
  t.equal(total, users, 'every user a recipient of one notification');
  // Every job is on the dispatch streams before the dispatch process starts.
  await eventually('fanned out', async () => ((await Promise.all(sent.map((n) => redis.hget(topology.own(NotificationKeys).notification(n.id), 'fanned')))).every((f) => f === '1') ? true : undefined), 60_000);

  const dispatch = await s.d.start(['dispatch']);
  await eventually('sends in flight', async () => {
    const now = await received(s.sims);
    return now.total >= 500 && now.unanswered > 0 ? true : undefined;
  }, 60_000);
  await dispatch.kill();
  // The jobs the killed worker had read and not recorded: pending in the group, under its name.
  const pending = (await Promise.all(Array.from({ length: partitions }, (_, p) => redis.xpending(topology.dispatch(p), DISPATCH_GROUP)))).reduce((sum, reply) => sum + Number((reply as [number])[0]), 0);
  // Their users: a fan-out job holds several (UsersJob, schemas/notifications.ts).
  let pendingUsers = 0;
  for (let p = 0; p < partitions; p++) {
    for (const [id] of (await redis.xpending(topology.dispatch(p), DISPATCH_GROUP, '-', '+', 100_000)) as [string][]) {
      const [entry] = await redis.xrange(topology.dispatch(p), id, id);
      pendingUsers += (JSON.parse(entry?.[1][1] ?? '{}') as { users?: string[] }).users?.length ?? 1;
    }
  }
  await sleep(delayMs + 200);
  const atKill = await received(s.sims);
  const done = (await Promise.all(sent.map((n) => notifications.counts(n.id)))).reduce((sum, c) => sum + c.done, 0);
  t.comment(`at the kill: ${pending} jobs of ${pendingUsers} users read and not recorded, ${done} users recorded, ${atKill.total} sends received by the simulators of ${total}`);
  t.ok(pending > 0, 'the kill landed with jobs in flight');
  t.ok(pendingUsers <= window, `no more users in flight than WINDOW × partitions (${window})`);
  t.ok(atKill.total < total, 'the kill landed before every user was sent to');
  t.ok(done < total, 'and before every job was recorded');

  await s.d.start(['dispatch']);
  const attempts = await checkRecords(t, s, notifications, sent);
  const got = await received(s.sims);
  const duplicates = excessSends(t, s, sent, got, attempts);
  t.equal(got.refused, 0, 'no send refused');
  t.comment(`duplicate sends at the providers: ${duplicates} (users in flight at the kill: ${pendingUsers}, bound ${window})`);
  t.ok(duplicates >= 1, 'sends in flight at the kill were sent again (the test exercises the duplicate path)');
  t.ok(duplicates <= pendingUsers, 'duplicates at most the users of the jobs the killed worker had read and not recorded');
  t.ok(duplicates <= window, `duplicates at most WINDOW × partitions owned (${WINDOW} × ${partitions})`);
});

t.test('a fan-out resumed after a crash counts the recipients its predecessor appended', async (t) => {
  // The state a fan-out SIGKILLed mid-chunk leaves: some users of a filter audience appended
  // (Notifications.appendJobs), its progress not saved. The audience needs ClickHouse, which
  // only one process can hold, so the accept runs in a process without the fanout role and the
  // resumed fan-out in the next one, with every role.
  const first = await stage(t, ALL_ROLES.filter((r) => r !== 'fanout'));
  const { redis, topology, notifications } = openState(t, first);
  await register(first, 3000);
  const filters = [{ field: 'tag', key: 'language', relation: 'exists' }];
  await call(`${first.engine.url}/api/segments`, 'POST', first.rest, { name: 'speakers', filters });
  await eventually('users mirrored', async () => (((await call(`${first.engine.url}/api/segments/speakers/count`, 'GET', first.rest)).body as { count: number }).count === 2000 ? true : undefined), 60_000);
  const answer = await call(`${first.engine.url}/api/notifications`, 'POST', first.rest, { ...body, channel: 'EMAIL', filters });
  const created = answer.body as { id: string; recipients: number };
  t.same([answer.status, created.recipients], [201, 400], 'users with a language (2 in 3) and an EMAIL subscription (1 in 5)');
  await first.engine.stop();

  const early = ['u4', 'u14', 'u19', 'u29'];
  for (const user of early) {
    const p = topology.partitionOf(first.d.project.project_id, user);
    await notifications.appendJobs({ id: created.id, project: first.d.project.project_id, ttl: 3600 }, p, [user]);
  }
  const appendedSets = early.map((user) => topology.own(NotificationKeys).notificationFanned(topology.partitionOf(first.d.project.project_id, user), created.id));
  const setsLeft = async (): Promise<number> => (await Promise.all(appendedSets.map((key) => redis.exists(key)))).reduce((a, b) => a + b, 0);
  t.ok((await setsLeft()) > 0, 'the crashed fan-out left its sets of appended users');
  const s: Stage = { ...first, engine: await first.d.start(ALL_ROLES) };
  const view = await until(s, created.id, 'completed', 120_000);
  t.equal((await notifications.counts(created.id)).jobs, 400, 'one job per user of the audience');
  t.equal(view.recipients, 400, 'recipients counts the users appended before the crash too');
  await eventually('the sets of appended users removed once fanned out', async () => ((await setsLeft()) === 0 ? true : undefined), 30_000);
  t.pass('no set of appended users outlives the fan-out');
});
