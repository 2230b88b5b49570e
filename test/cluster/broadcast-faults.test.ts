import t, { type Test } from 'tap';
import { PrivateCluster } from '../../bench/redis-cluster.ts';
import { ALL_ROLES, register, stageWithoutEngine, type Stage } from '../helpers/broadcast.ts';
import { broadcast, checkRecords, excessSends, openState, received } from '../helpers/broadcast-audit.ts';
import { clusterNodes, reshard } from '../helpers/cluster-fault.ts';
import { eventually } from '../helpers/http.ts';
import { endWhenDone } from '../helpers/file-end.ts';

/**
 * A broadcast on a three-node Redis Cluster (append-only, fsync always) while the cluster changes
 * under it: a primary SIGKILLed and started again on its data, or slots moved to another primary.
 * Every recipient must end with exactly one `sent` record, one record per attempt, and no send at
 * the providers beyond the attempts recorded: the leases outlive the fault, so the dispatch worker
 * keeps its partitions and tries a record Redis could not take again until it can, rather than
 * sending the job again (docs/reliability.md#redis-cluster).
 */

// Seen twice in loaded runs of the whole suite, never alone: after both tests passed, something
// of this file's held its process open until tap's limit. What it is gets printed.
endWhenDone(t);

const USERS = 3000;
const DOWN_MS = 4000;
const SLOTS = 3000;
/**
 * Longer than the node is down, its restart on its data and the cluster's settling included, on a
 * loaded machine too: a lease that lapsed would hand its jobs over, to be sent again
 * (docs/reliability.md#redis-cluster). With 10 s, one loaded run of the whole suite sent 10 jobs
 * twice; runs alone did not.
 */
const LEASE_MS = '30000';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Every role in one process on a cluster of its own; FCM and Twilio answer after `delayMs`, and
 * SendGrid holds its answers until released, so the broadcast is still under way when the fault
 * lands, however loaded the machine (no send times out meanwhile: PROVIDER_TIMEOUT_MS).
 */
async function clusterStage(t: Test, delayMs: number): Promise<{ s: Stage; cluster: PrivateCluster }> {
  const cluster = await PrivateCluster.start({ durable: true, nodeTimeoutMs: 15_000 });
  t.teardown(() => cluster.stop());
  const setting = await stageWithoutEngine(t, { REDIS_URL: cluster.url, LEASE_MS, PROVIDER_TIMEOUT_MS: '120000' });
  const s: Stage = { ...setting, engine: await setting.d.start(ALL_ROLES) };
  await register(s, USERS);
  await s.sims.fcm.script({ match: { path: 'messages:send' }, respond: { status: 200, body: { name: 'projects/demo-project/messages/slow' }, delayMs } });
  await s.sims.twilio.script({ match: { path: '/Messages.json' }, respond: { status: 201, body: { sid: 'SMslow', status: 'queued' }, delayMs } });
  await s.sims.sendgrid.script({ match: { path: '/v3/mail/send' }, respond: { status: 202, headers: { 'x-message-id': 'slow' }, hold: true } });
  return { s, cluster };
}

/** Sends answered so far: fewer than the recipients while SendGrid holds its answers. */
async function answered(s: Stage): Promise<number> {
  const now = await received(s.sims);
  return now.total - now.unanswered;
}

/** Waits until the simulators have received `count` sends of the broadcast, and not all of them. */
async function underWay(s: Stage, count: number): Promise<void> {
  await eventually('sends under way', async () => ((await received(s.sims)).total >= count ? true : undefined), 60_000);
}

/** The audit after the fault: one `sent` record per recipient, one record per attempt, nothing sent twice. */
async function audit(t: Test, s: Stage, sent: Awaited<ReturnType<typeof broadcast>>): Promise<void> {
  const { notifications } = openState(t, s);
  const attempts = await checkRecords(t, s, notifications, sent);
  t.equal(excessSends(t, s, sent, await received(s.sims), attempts), 0, 'no send at the providers beyond the attempts recorded');
}

t.test('a cluster primary SIGKILLed mid-broadcast and restarted on its data: one sent record per recipient', async (t) => {
  const { s, cluster } = await clusterStage(t, 300);
  const sent = await broadcast(s, USERS);
  t.equal(sent.reduce((sum, n) => sum + n.recipients, 0), USERS, 'every user a recipient of one notification');
  await underWay(s, 200);
  const victim = (await clusterNodes(cluster.ports[0] ?? 0)).find((n) => n.primary && n.port !== cluster.ports[0]);
  if (!victim) throw new Error('no primary to kill');
  await cluster.kill(victim.port);
  const atKill = await answered(s);
  t.comment(`at the kill: ${atKill} sends answered of ${USERS}`);
  t.ok(atKill < USERS, 'the kill landed before every user was sent to');
  await sleep(DOWN_MS);
  await cluster.restart(victim.port);
  await cluster.settled();
  await s.sims.sendgrid.release();
  await audit(t, s, sent);
});

t.test('slots moved to another primary mid-broadcast: one sent record per recipient', async (t) => {
  const { s, cluster } = await clusterStage(t, 300);
  const sent = await broadcast(s, USERS);
  await underWay(s, 200);
  const [source, target] = (await clusterNodes(cluster.ports[0] ?? 0)).filter((n) => n.primary);
  if (!source || !target) throw new Error('no source or target primary');
  await reshard(source.port, source.id, target.id, SLOTS);
  const atMove = await answered(s);
  t.comment(`when the slots had moved: ${atMove} sends answered of ${USERS}`);
  t.ok(atMove < USERS, 'the slots moved before every user was sent to');
  await cluster.settled();
  await s.sims.sendgrid.release();
  const after = (await clusterNodes(cluster.ports[0] ?? 0)).find((n) => n.id === target.id);
  t.equal(slotCount(after?.slots ?? []), slotCount(target.slots) + SLOTS, `the target serves ${SLOTS} slots more`);
  await audit(t, s, sent);
});

function slotCount(ranges: [number, number][]): number {
  return ranges.reduce((sum, [lo, hi]) => sum + hi - lo + 1, 0);
}
