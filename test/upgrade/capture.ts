/**
 * Writes test/upgrade/fixtures/0.11.1.json: the Redis of an install of 0.11.1 after a fixed
 * workload, which test/upgrade/from-0.11.1.test.ts loads and upgrades. Run it from this checkout,
 * given a checkout of 0.11.1 (commit 6027315) that uses this one's packages:
 * `git worktree add --detach /tmp/v0111 6027315 && ln -s "$PWD/node_modules" /tmp/v0111/node_modules`,
 * then `node --import tsx test/upgrade/capture.ts /tmp/v0111`. It starts a redis-server of its own
 * on a free port, the provider simulators in this process and the release's engine from its
 * sources (every role but sql, in one process), drives the workload through the release's HTTP API
 * and waits until every write is applied, recorded and tapped, with the sends to two users held
 * open by the APNs simulator and the webhook receiver holding every POST. It keeps what the release
 * answers for its users, notifications and events, SIGKILLs it (the held jobs stay pending, the
 * webhook events queued), waits for its leases to lapse, and writes every key, prefix stripped,
 * but three things of that run only: the simulators' credentials (redacted), the APNs provider
 * token they signed, and the stream entries every group has acknowledged.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { startSimulators } from '../../simulators/index.ts';
import { androidToken, iosToken } from '../../simulators/tokens.ts';
import { startEngine, testEnv } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { dumpPrefix, type FixtureStream, type FixtureUser, type IdempotentSend, type UpgradeFixture } from '../helpers/upgrade-fixture.ts';

const RELEASE = '0.11.1';
const COMMIT = '6027315';
const PREFIX = 'v0111:';
const PARTITIONS = 8;
const USERS = 20;
/**
 * How long the release waits for a provider's or a webhook receiver's answer (its most): the held
 * sends and POSTs must still be held when it is killed, so the capture ends sooner.
 */
const ANSWER_TIMEOUT_MS = 120_000;

const checkout = resolve(process.argv[2] ?? '');
const version = (JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as { version: string }).version;
if (version !== RELEASE) throw new Error(`${checkout} is version ${version}, not ${RELEASE}: give a checkout of ${COMMIT}`);
const bin = join(checkout, 'bin', 'engine.js');
const out = fileURLToPath(new URL(`fixtures/${RELEASE}.json`, import.meta.url));

/** Undone in reverse order when the capture ends, whether or not it succeeded. */
const cleanups: (() => unknown)[] = [];
try {
  await capture();
} finally {
  for (const undo of cleanups.reverse()) await undo();
}

async function capture(): Promise<void> {
  const redisServer = await PrivateRedis.start();
  cleanups.push(() => redisServer.stop());
  const redis = new Redis(redisServer.url);
  cleanups.push(() => redis.disconnect());
  const sims = await startSimulators();
  cleanups.push(() => sims.close());
  const env = testEnv(PREFIX, {
    REDIS_URL: redisServer.url,
    PARTITIONS: String(PARTITIONS),
    PROVIDER_CA_FILE: sims.caFile,
    ENGINE_FROM_SOURCE: '1',
    PROVIDER_TIMEOUT_MS: String(ANSWER_TIMEOUT_MS),
    WEBHOOK_TIMEOUT_MS: String(ANSWER_TIMEOUT_MS),
    LOG_LEVEL: 'warn',
  });
  const dataDir = env['DATA_DIR'] ?? '';
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));

  /** Runs the release's `engine <args>` and answers its stdout. */
  async function cli(...args: string[]): Promise<string> {
    const run = await promisify(execFile)(process.execPath, [bin, ...args], { env: { ...process.env, ...env } });
    return run.stdout;
  }

  const project = JSON.parse(await cli('project', 'create', 'upgrade', '--json')) as UpgradeFixture['project'];
  await cli('project', 'update', project.project_id, '--timezone', 'Europe/Paris');
  for (const [provider, creds] of Object.entries({
    apns: sims.apns.credentials(),
    fcm: sims.fcm.credentials(),
    webpush: sims.webpush.credentials(),
    twilio: sims.twilio.credentials(),
    sendgrid: sims.sendgrid.credentials(),
  })) {
    const file = join(dataDir, `${provider}.json`);
    writeFileSync(file, JSON.stringify(creds));
    await cli('providers', 'set', project.project_id, provider, '--file', file);
  }

  // LOG_LEVEL warn would hide the "started" line startEngine waits for.
  const engine = await startEngine(['gateway', 'apply', 'fanout', 'dispatch', 'recorder', 'scheduler', 'webhooks'], { ...env, LOG_LEVEL: 'info' }, [bin]);
  cleanups.push(() => engine.kill());
  const api = async (method: string, path: string, body?: unknown, key = project.rest_key): Promise<unknown> => {
    const answer = await call(`${engine.url}${path}`, method, key, body);
    if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  const sdk = (method: string, path: string, body: unknown): Promise<unknown> => api(method, path, body, project.sdk_key);

  const topology = new Topology(PREFIX, PARTITIONS);
  const name = (i: number): string => `user-${String(i).padStart(2, '0')}`;
  const partitionOf = (externalId: string): number => topology.partitionOf(project.project_id, externalId);

  /** Every stream read to its end and acknowledged by every group, but `heldJobs` dispatch jobs; no outbox, round or retry left. */
  async function settled(heldJobs: number): Promise<true | undefined> {
    let dispatchPending = 0;
    for (const stream of await scan('*', 'stream')) {
      if (stream.startsWith(`${PREFIX}outbox:`) && (await redis.xlen(stream)) > 0) return undefined;
      const last = String(pairs(await redis.call('XINFO', 'STREAM', stream))['last-generated-id']);
      for (const raw of (await redis.call('XINFO', 'GROUPS', stream)) as unknown[]) {
        const g = pairs(raw);
        // The webhooks group is made to start a few seconds back, which may be past the last entry.
        if (compareIds(String(g['last-delivered-id']), last) < 0) return undefined;
        if (stream.startsWith(`${PREFIX}dispatch:`)) dispatchPending += Number(g['pending']);
        else if (Number(g['pending']) > 0) return undefined;
      }
    }
    if ((await scan('recorder:round:*')).length > 0) return undefined;
    for (const retry of await scan('retry:*')) if ((await redis.zcard(retry)) > 0) return undefined;
    return dispatchPending === heldJobs ? true : undefined;
  }

  async function scan(pattern: string, type?: string): Promise<string[]> {
    const found: string[] = [];
    let cursor = '0';
    do {
      const match = `${PREFIX}${pattern}`;
      const [next, keys] = type === undefined ? await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000) : await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000, 'TYPE', type);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
    return found;
  }

  function pairs(reply: unknown): Record<string, unknown> {
    const list = reply as unknown[];
    const o: Record<string, unknown> = {};
    for (let i = 0; i < list.length; i += 2) o[String(list[i])] = list[i + 1];
    return o;
  }

  const waitSettled = (what: string, heldJobs = 0): Promise<true> => eventually(what, () => settled(heldJobs), 120_000);

  // The users: tags (five for the first four), one to three subscriptions each.
  const users: FixtureUser[] = [];
  const operations: Record<string, unknown>[] = [];
  for (let i = 0; i < USERS; i++) {
    const externalId = name(i);
    const tags: Record<string, string | number> = { plan: i % 2 === 0 ? 'pro' : 'free', level: i };
    if (i < 4) Object.assign(tags, { language: ['fr', 'pt-BR', 'de', 'en'][i] ?? 'en', city: 'Lyon', score: 12.5 + i });
    const subscriptions: Record<string, string>[] = [];
    if (i % 3 === 0) subscriptions.push({ type: 'IOS_PUSH', token: iosToken(i), device_model: 'iPhone15,2', device_os: '17.1', app_version: '2.3.0' });
    if (i % 3 === 1) subscriptions.push({ type: 'ANDROID_PUSH', token: androidToken(i), device_model: 'Pixel 8' });
    if (i % 2 === 0) subscriptions.push({ type: 'EMAIL', token: `${externalId}@example.com` });
    if (i % 5 === 2) subscriptions.push({ type: 'SMS', token: `+155500000${String(i).padStart(2, '0')}` });
    if (i === 5) subscriptions.push({ type: 'WEB_PUSH', ...sims.webpush.subscription() });
    operations.push({ op: 'identify', external_id: externalId, tags, ...(i === 5 ? { timezone: 'Europe/Paris' } : {}) });
    for (const s of subscriptions) operations.push({ op: 'subscribe', external_id: externalId, ...s });
    users.push({
      external_id: externalId,
      partition: partitionOf(externalId),
      tags: i === 5 ? { ...tags, timezone: 'Europe/Paris' } : tags,
      subscriptions: subscriptions.map((s) => ({ type: s['type'] ?? '', token: s['token'] ?? '' })),
      opted_out: [],
    });
  }
  const user = (externalId: string): FixtureUser => {
    const found = users.find((u) => u.external_id === externalId);
    if (found === undefined) throw new Error(`no user ${externalId}`);
    return found;
  };

  // A token registered by user-06, then by user-07, which takes it over.
  const moved = { type: 'IOS_PUSH', token: iosToken(100), from: name(6), to: name(7) };
  operations.push({ op: 'subscribe', external_id: moved.from, type: moved.type, token: moved.token });
  await sdk('POST', '/api/sdk/batch', { operations });
  await waitSettled('the users applied');
  await sdk('POST', `/api/sdk/users/${moved.to}/subscriptions`, { type: moved.type, token: moved.token });
  user(moved.to).subscriptions.push({ type: moved.type, token: moved.token });
  // A tag set, then deleted.
  await sdk('PUT', `/api/sdk/users/${name(4)}/tags`, { promo: 'spring' });
  await sdk('PUT', `/api/sdk/users/${name(4)}/tags`, { promo: null });
  // An opt-out lifted: the consent entry stays, opted_out false.
  await sdk('POST', '/api/sdk/opt-out', { external_id: name(10), subscription_type: 'ANDROID_PUSH' });
  await sdk('POST', '/api/sdk/opt-in', { external_id: name(10), subscription_type: 'ANDROID_PUSH' });
  // An opt-out of a user not known yet: 0.11.1 keeps their consent hash alone.
  const consentOnly = { external_id: 'ghost-01', subscription_type: 'EMAIL' };
  await sdk('POST', '/api/sdk/opt-out', consentOnly);
  await waitSettled('the token move and the tags applied');

  const segment = (await api('POST', '/api/segments', { name: 'pro users', filters: [{ field: 'tag', key: 'plan', relation: '=', value: 'pro' }] })) as Record<string, unknown>;
  const template = (await api('POST', '/api/templates', { name: 'welcome', headings: { en: 'Welcome' }, contents: { en: 'Hello {{ plan | default: "there" }}' } })) as Record<string, unknown>;

  // Events with idempotency keys. 0.11.1 keyed them by project and key within a partition, so the
  // pair of users of one partition shows what it did with a key sent for two users there.
  const byPartition = new Map<number, string[]>();
  for (const u of users) byPartition.set(u.partition, [...(byPartition.get(u.partition) ?? []), u.external_id]);
  const [anchor, neighbour] = [...byPartition.values()].find((ids) => ids.length >= 2) ?? [];
  if (anchor === undefined || neighbour === undefined) throw new Error('no two users share a partition');
  const stranger = users.find((u) => u.partition !== partitionOf(anchor));
  const other = users.find((u) => u.partition !== partitionOf(name(2)) && u.external_id !== anchor && u.external_id !== neighbour);
  if (stranger === undefined || other === undefined) throw new Error('every user is in one partition');
  const plan: Omit<IdempotentSend, 'partition' | 'recorded'>[] = [
    { external_id: anchor, key: 'order-1001', name: 'purchase' },
    { external_id: anchor, key: 'order-1001', name: 'purchase-retry' },
    { external_id: anchor, key: 'promo-7', name: 'promo' },
    { external_id: neighbour, key: 'promo-7', name: 'promo' },
    { external_id: name(2), key: 'welcome', name: 'welcome' },
    { external_id: other.external_id, key: 'welcome', name: 'welcome' },
    { external_id: name(3), key: 'order-1003', name: 'purchase' },
  ];
  for (const e of plan) await sdk('POST', '/api/sdk/events', { external_id: e.external_id, name: e.name, idempotency_key: e.key, properties: { sku: 'A-1', amount: 12.5 } });
  await sdk('POST', '/api/sdk/events', { external_id: name(0), name: 'page_view', properties: { path: '/home' } });
  await waitSettled('the events recorded');

  // A notification sent and completed, and a receipt for it; APNs calls one token dead, which retires it.
  const retired = user(name(18)).subscriptions.find((s) => s.type === 'IOS_PUSH')?.token;
  if (retired === undefined) throw new Error(`${name(18)} has no IOS_PUSH subscription`);
  await sims.apns.script({ match: { token: retired }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: Date.now() } }, times: 1 });
  const completedId = ((await api('POST', '/api/notifications', { include_external_user_ids: [name(0), name(3), name(4), name(18)], headings: { en: 'Hi' }, contents: { en: 'First' } })) as { id: string }).id;
  await eventually('the first notification completed', async () => (((await api('GET', `/api/notifications/${completedId}`)) as { status: string }).status === 'completed' ? true : undefined), 120_000);
  await sdk('POST', '/api/sdk/receipts', { svc_message_id: completedId, external_id: name(0), kind: 'opened' });
  await waitSettled('the receipt recorded');

  // A webhook endpoint whose receiver holds every POST: its events stay queued.
  let heldPosts = 0;
  let killed = false;
  let cutShort = 0;
  let firstPostAt = 0;
  const receiver = createServer((req) => {
    firstPostAt ||= Date.now();
    heldPosts++;
    req.socket.on('close', () => {
      if (!killed) cutShort++;
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    receiver.closeAllConnections();
    receiver.close();
  });
  const webhookEvents = ['delivery.sent', 'notification.completed', 'user.opted_out'];
  const webhook = (await api('POST', '/api/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`, events: webhookEvents })) as { id: string; secret: string };
  await sdk('POST', '/api/sdk/opt-out', { external_id: name(8), subscription_type: 'EMAIL' });
  user(name(8)).opted_out.push('EMAIL');

  // A notification in flight: the APNs simulator holds the sends to two of its four users.
  const heldUsers = [name(9), name(12)];
  for (const u of heldUsers) {
    const token = user(u).subscriptions.find((s) => s.type === 'IOS_PUSH')?.token;
    if (token === undefined) throw new Error(`${u} has no IOS_PUSH subscription`);
    await sims.apns.script({ match: { token }, respond: { status: 200, hold: true } });
  }
  const inFlightAt = Date.now();
  const inFlightId = (
    (await api('POST', '/api/notifications', {
      include_external_user_ids: [...heldUsers, name(15), name(1)],
      headings: { en: 'Hi' },
      contents: { en: 'In flight' },
      idempotency_key: 'in-flight-1',
    })) as { id: string }
  ).id;
  await eventually('the held sends at the simulator, the others sent', async () => {
    const waiting = (await sims.apns.requests()).filter((r) => r.status === 0).length;
    const view = (await api('GET', `/api/notifications/${inFlightId}`)) as { counts: { sent: number } };
    return waiting === heldUsers.length && view.counts.sent === 2 ? true : undefined;
  }, 120_000);
  const scheduledId = ((await api('POST', '/api/notifications', { include_external_user_ids: [name(0)], contents: { en: 'Later' }, send_after: '2099-01-01T00:00:00Z' })) as { id: string }).id;
  await waitSettled('everything but the held jobs settled', heldUsers.length);
  const queue = `${PREFIX}whq:{w:${webhook.id}}`;
  await eventually('the webhook events queued and the first POSTs held', async () => ((await redis.xlen(queue)) >= 3 && heldPosts > 0 ? true : undefined), 120_000);

  // What 0.11.1 answers, kept to compare with what the current engine answers after the upgrade.
  const reads: Record<string, unknown> = {};
  for (const u of users) reads[u.external_id] = await api('GET', `/api/users/${u.external_id}`);
  const recordedNames = new Map<string, string[]>();
  for (const id of new Set(plan.map((e) => e.external_id))) {
    const { events } = (await api('GET', `/api/events?external_id=${id}&limit=100`)) as { events: { name: string }[] };
    recordedNames.set(id, events.map((e) => e.name));
  }
  const sent: IdempotentSend[] = plan.map((e) => ({ ...e, partition: partitionOf(e.external_id), recorded: recordedNames.get(e.external_id)?.includes(e.name) ?? false }));
  const view = async (id: string): Promise<Record<string, unknown>> => (await api('GET', `/api/notifications/${id}`)) as Record<string, unknown>;
  const notifications = {
    completed: { id: completedId, view: await view(completedId) },
    in_flight: { id: inFlightId, held: heldUsers, view: await view(inFlightId) },
    scheduled: { id: scheduledId, view: await view(scheduledId) },
  };
  const queued = (await redis.xrange(queue, '-', '+')).map(([, fields]) => {
    const body = JSON.parse(fields[fields.indexOf('e') + 1] ?? '{}') as { id: string; type: string };
    return { id: body.id, type: body.type };
  });
  if ((await settled(heldUsers.length)) !== true) throw new Error('the install moved while its answers were read');

  if (Date.now() - Math.min(firstPostAt, inFlightAt) > ANSWER_TIMEOUT_MS - 10_000) throw new Error('the capture took too long: the held sends are about to time out');
  killed = true;
  await engine.kill();
  if (cutShort > 0) throw new Error(`${cutShort} held webhook POSTs were cut short before the kill`);
  if ((await sims.apns.requests()).filter((r) => r.status === 0).length !== heldUsers.length) throw new Error('a held send was answered before the kill');
  await eventually('the leases lapsed', async () => ((await scan('*lease*')).length === 0 ? true : undefined), 30_000);

  // The APNs provider token is a cache of 40 minutes signed with the simulator's key: left out.
  const keys = await dumpPrefix(redis, PREFIX, (key) => !key.startsWith('apns-token:'));
  for (const key of Object.values(keys)) if (key.type === 'stream') key.value.entries = unacknowledged(key.value);
  // The simulators' credentials, private keys included, are of this run only: the test sets its own.
  const providers = keys[`project:${project.project_id}:providers`];
  if (providers?.type === 'hash') for (const field of Object.keys(providers.value)) providers.value[field] = 'redacted';
  const facts: Omit<UpgradeFixture, 'keys'> = {
    release: RELEASE,
    commit: COMMIT,
    captured_at: new Date().toISOString(),
    prefix_stripped: PREFIX,
    partitions: PARTITIONS,
    project,
    users,
    moved_token: moved,
    consent_only: consentOnly,
    idempotency: {
      sent,
      same_partition: { key: 'order-1001', seen_for: anchor, external_id: neighbour },
      other_partition: { key: 'order-1001', seen_for: anchor, external_id: stranger.external_id },
    },
    notifications,
    webhook: { id: webhook.id, secret: webhook.secret, events: webhookEvents, queued },
    segment,
    template,
    reads,
  };
  // The keys last, one line each, so that a new capture's changes read key by key.
  const lines = Object.entries(keys).map(([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  writeFileSync(out, `${JSON.stringify(facts, null, 1).slice(0, -2)},\n "keys": {\n${lines.join(',\n')}\n }\n}\n`);
  console.log(`wrote ${out}: ${Object.keys(keys).length} keys`);
}

/**
 * A stream's entries but those every group has read and acknowledged, which the engine's own trims
 * may drop at any time; a stream without groups keeps them all (its reader deletes what it is done with).
 */
function unacknowledged(stream: FixtureStream): FixtureStream['entries'] {
  if (stream.groups.length === 0) return stream.entries;
  const pending = new Set(stream.groups.flatMap((g) => g.pending.map((p) => p.id)));
  const read = stream.groups.map((g) => g.last_delivered_id).reduce((a, b) => (compareIds(a, b) < 0 ? a : b));
  return stream.entries.filter(([id]) => pending.has(id) || compareIds(id, read) > 0);
}

/** Negative, zero or positive as stream ID `a` comes before, is, or comes after `b`. */
function compareIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}
