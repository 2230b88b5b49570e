/**
 * The audience of bench/broadcast.ts: N users with one push subscription each, the --types in
 * rotation, registered through /api/sdk/batch (a user is created by its first write); the bench
 * goes on once every write is applied and, for segment All, mirrored into ClickHouse.
 */
import { Pool } from 'undici';
import { androidToken, iosToken } from '../simulators/tokens.ts';
import type { BroadcastDeployment } from './broadcast-deployment.ts';
import { shareOf, TYPE_NAMES, typeOf, type BroadcastOptions, type TypeName } from './broadcast-options.ts';
import { call, sleep, waitFor, waitMirrored } from './deployment.ts';
import { log } from './run.ts';
import { round } from './table.ts';

const BATCH_OPS = 1000;
const BATCH_PARALLEL = 4;
/** How long the engine may take to apply the writes, and to mirror the users. */
const WAIT_MS = 30 * 60_000;

/** How long the users took, from the first batch sent, to be accepted, applied and mirrored. */
export interface Registration {
  users: number;
  by_type: Record<string, number>;
  accept_seconds: number;
  applied_seconds: number;
  mirrored_seconds: number | null;
}

interface SubscribeOp {
  op: 'subscribe';
  external_id: string;
  type: (typeof TYPE_NAMES)[TypeName];
  token?: string;
  web_auth?: string;
  web_p256?: string;
}

type WebSubscription = Required<Pick<SubscribeOp, 'token' | 'web_auth' | 'web_p256'>>;

export async function registerUsers(dep: BroadcastDeployment, options: BroadcastOptions): Promise<Registration> {
  const { users } = options;
  // A web push user's endpoint and keys come from the simulator (POST /__sim/subscriptions),
  // which keeps the private key to decrypt what the engine sends.
  const webpushSim = new Pool(dep.sims.urls['webpush'] ?? '', { connect: { ca: dep.ca }, connections: 8 });
  const started = Date.now();
  await sendSubscribes(dep, options, () => webSubscription(webpushSim));
  const acceptedAt = Date.now();
  await sleep(1000); // the lag gauge is refreshed periodically: do not read a value from before the writes
  await waitApplied(dep.base);
  const appliedAt = Date.now();
  if (options.audience === 'all') {
    await waitMirrored({ base: dep.base, restKey: dep.project.rest_key }, users, { ms: WAIT_MS, every: 2000, heard: (count) => log(`bench: segment All counts ${count}/${users}`) });
  }
  await webpushSim.close();
  const registration: Registration = {
    users,
    by_type: Object.fromEntries(options.types.map((t, k) => [TYPE_NAMES[t], shareOf(options, users, k)])),
    accept_seconds: round((acceptedAt - started) / 1000, 1),
    applied_seconds: round((appliedAt - started) / 1000, 1),
    mirrored_seconds: options.audience === 'all' ? round((Date.now() - started) / 1000, 1) : null,
  };
  const mirrored = registration.mirrored_seconds === null ? '' : `, in ClickHouse in ${registration.mirrored_seconds} s`;
  log(`bench: ${users} users registered: accepted in ${registration.accept_seconds} s, applied in ${registration.applied_seconds} s${mirrored}`);
  return registration;
}

/** Every user's subscribe, BATCH_OPS to a batch call, BATCH_PARALLEL calls at once; each must be accepted. */
async function sendSubscribes(dep: BroadcastDeployment, options: BroadcastOptions, webSubscription: () => Promise<WebSubscription>): Promise<void> {
  const { users } = options;
  const calls = Math.ceil(users / BATCH_OPS);
  let sent = 0;
  let nextCall = 0;
  const caller = async (): Promise<void> => {
    for (let c = nextCall++; c < calls; c = nextCall++) {
      const operations: SubscribeOp[] = [];
      for (let i = c * BATCH_OPS; i < Math.min(users, (c + 1) * BATCH_OPS); i++) operations.push(subscribeOp(options, i));
      await Promise.all(operations.map(async (op) => (op.type === 'WEB_PUSH' ? Object.assign(op, await webSubscription()) : op)));
      const answer = await call(`${dep.base}/api/sdk/batch`, 'POST', dep.project.sdk_key, { operations });
      if (answer.status !== 202) throw new Error(`batch answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
      sent += operations.length;
      if (c % 50 === 0) log(`bench: registering ${sent}/${users} users`);
    }
  };
  await Promise.all(Array.from({ length: BATCH_PARALLEL }, caller));
}

/** User i's subscribe operation; a web push one gets its endpoint and keys from the simulator. */
function subscribeOp(options: BroadcastOptions, i: number): SubscribeOp {
  const name = typeOf(options, i);
  const op: SubscribeOp = { op: 'subscribe', external_id: `u${i}`, type: TYPE_NAMES[name] };
  if (name === 'ios') op.token = iosToken(i);
  if (name === 'android') op.token = androidToken(i);
  return op;
}

async function webSubscription(webpushSim: Pool): Promise<WebSubscription> {
  const answer = await webpushSim.request({ method: 'POST', path: '/__sim/subscriptions' });
  if (answer.statusCode !== 201) throw new Error(`web push simulator answered ${answer.statusCode} to POST /__sim/subscriptions`);
  return (await answer.body.json()) as WebSubscription;
}

/** Waits until the engine's ingest lag gauge reads 0: every write applied. */
async function waitApplied(base: string): Promise<void> {
  await waitFor(
    'every write applied',
    async () => {
      const metrics = (await call(`${base}/metrics`, 'GET', null)).body as string;
      const lag = /svc_ingest_lag_entries (\d+)/.exec(metrics)?.[1];
      if (lag !== '0') log(`bench: ingest lag ${lag ?? '?'} entries`);
      return lag === '0' ? true : undefined;
    },
    WAIT_MS,
    2000,
  );
}
