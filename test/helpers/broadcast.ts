import type { Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { ProviderStore } from '../../engine/state/keys/provider-store.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { readHashes, type UserHashes } from '../../engine/state/users/read-user.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import type { ProviderName } from '../../schemas/providers.ts';
import { startSimulators, type Simulators } from '../../simulators/index.ts';
import { androidToken, iosToken } from '../../simulators/tokens.ts';
import { deployment, type EngineProcess, type TestDeployment } from './engine.ts';
import { call, eventually } from './http.ts';

export { iosToken };

/** A deployment with every provider pointed at the simulators, for broadcast tests. */

export const ALL_ROLES = ['gateway', 'apply', 'fanout', 'dispatch', 'recorder', 'scheduler'];
const TYPES = ['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH', 'SMS', 'EMAIL'] as const;
const LOCALES = [null, 'pt-BR', 'fr'] as const;

export interface Delivery {
  external_id: string;
  status: string;
  subscription_type: string | null;
  error_code: string | null;
  hint: string | null;
  attempt: number;
  retrying?: boolean;
  receipt?: string | null;
}

export interface Stage {
  d: TestDeployment;
  sims: Simulators;
  engine: EngineProcess;
  rest: string;
  /** external_id to the token of its subscription, for every user `register` registered. */
  tokens: Map<string, string>;
}

/** A stage before any engine process runs: start processes with `d.start`, then add `engine`. */
export type Setting = Omit<Stage, 'engine'>;

/**
 * Simulators, a deployment whose project has every provider registered, and one engine process
 * with `roles` (all by default); `env` is added to the engine's.
 */
export async function stage(t: Test, roles: string[] = ALL_ROLES, env: Record<string, string> = {}): Promise<Stage> {
  const setting = await stageWithoutEngine(t, env);
  const engine = await setting.d.start(roles);
  return { ...setting, engine };
}

/**
 * What `stage` prepares, without starting an engine: for tests that run the roles in several
 * processes (each started with `d.start`, which passes PROVIDER_CA_FILE on).
 */
export async function stageWithoutEngine(t: Test, env: Record<string, string> = {}): Promise<Setting> {
  const sims = await startSimulators();
  t.teardown(() => sims.close());
  const d = await deployment(t, { env: { PROVIDER_CA_FILE: sims.caFile, ...env } });
  const redis = createRedis(loadConfig(d.env));
  const providers = new ProviderStore(redis, new Topology(d.env['KEY_PREFIX'] ?? '', Number(d.env['PARTITIONS'])));
  const creds: Record<ProviderName, object> = {
    apns: sims.apns.credentials(),
    fcm: sims.fcm.credentials(),
    webpush: sims.webpush.credentials(),
    twilio: sims.twilio.credentials(),
    sendgrid: sims.sendgrid.credentials(),
  };
  for (const [name, value] of Object.entries(creds)) await providers.set(d.project.project_id, name as ProviderName, value as never);
  redis.disconnect();
  return { d, sims, rest: d.project.rest_key, tokens: new Map() };
}

/** The subscription of user i: its type by i mod 5, a token the provider's simulator accepts. */
export function subscriptionOf(sims: Simulators, i: number): Record<string, string> {
  const type = TYPES[i % TYPES.length] ?? 'EMAIL';
  switch (type) {
    case 'IOS_PUSH':
      return { type, token: iosToken(i) };
    case 'ANDROID_PUSH':
      return { type, token: androidToken(i) };
    case 'WEB_PUSH':
      return { type, ...sims.webpush.subscription() };
    case 'SMS':
      return { type, token: `+1555${String(i).padStart(7, '0')}` };
    case 'EMAIL':
      return { type, token: `user${i}@example.com` };
  }
}

/**
 * Registers users u<from> .. u<from + count - 1> through the batch endpoint, each with one
 * subscription (subscriptionOf) and a language (none, pt-BR, fr by i mod 3), and waits until applied.
 */
export async function register(s: Stage, count: number, from = 0): Promise<void> {
  for (let start = from; start < from + count; start += 500) {
    const operations: Record<string, unknown>[] = [];
    for (let i = start; i < Math.min(from + count, start + 500); i++) {
      const locale = LOCALES[i % LOCALES.length];
      operations.push({ op: 'identify', external_id: `u${i}`, ...(locale ? { tags: { language: locale } } : {}) });
      const subscription = subscriptionOf(s.sims, i);
      s.tokens.set(`u${i}`, subscription['token'] ?? '');
      operations.push({ op: 'subscribe', external_id: `u${i}`, ...subscription });
    }
    const answer = await call(`${s.engine.url}/api/sdk/batch`, 'POST', s.d.project.sdk_key, { operations });
    if (answer.status !== 202) throw new Error(`batch answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  }
  await eventually(
    'every write applied',
    async () => {
      const metrics = (await call(`${s.engine.url}/metrics`, 'GET', null)).body as string;
      return /svc_ingest_lag_entries 0\b/.test(metrics) ? true : undefined;
    },
    60_000,
  );
  // The lag counts entries not yet read; a batch read and still being applied is not in it. What
  // GET /api/users shows (a user hash with created_at and a subscription), read from Redis at once.
  const redis = createRedis(loadConfig(s.d.env));
  const topology = new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS']));
  const project = s.d.project.project_id;
  try {
    // One command per key, not one pipeline: on a Redis Cluster the users' keys span slots.
    await eventually(`users u${from}.. applied`, async () => {
      const replies: Promise<UserHashes>[] = [];
      for (let i = from; i < from + count; i++) replies.push(readHashes(redis, topology, project, `u${i}`));
      return (await Promise.all(replies)).every((u) => u.user['created_at'] !== undefined && Object.keys(u.subs).length > 0) ? true : undefined;
    }, 60_000);
  } finally {
    redis.disconnect();
  }
}

/** Every delivery record of the project matching `query` (`&name=value...`), newest first, through the cursor. */
export async function deliveriesWhere<T = Delivery>(s: Stage, query = ''): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | null = null;
  do {
    const page = (await call(`${s.engine.url}/api/deliveries?limit=1000${query}${cursor ? `&cursor=${cursor}` : ''}`, 'GET', s.rest)).body as {
      deliveries: T[];
      next_cursor: string | null;
    };
    all.push(...page.deliveries);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return all;
}

/** Every delivery record of a notification, through the cursor. */
export function deliveriesOf(s: Stage, id: string): Promise<Delivery[]> {
  return deliveriesWhere(s, `&notification_id=${id}`);
}

/** Waits until the notification's status is `status` (completed by default); its view. */
export async function until(s: Stage, id: string, status = 'completed', ms = 120_000): Promise<{ status: string; counts: Record<string, number>; recipients: number }> {
  return eventually(
    `notification ${id} ${status}`,
    async () => {
      const view = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { status: string; counts: Record<string, number>; recipients: number };
      return view.status === status ? view : undefined;
    },
    ms,
  );
}
