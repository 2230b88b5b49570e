/**
 * The engine's web SDK: a page identifies its user, writes tags, events and consent, and
 * subscribes the browser to Web Push. Writes are queued in IndexedDB and sent in batches by one
 * sender across the origin's tabs, so they survive going offline and reloads (docs in README.md).
 *
 *   import * as svc from '@svc-engine/web';
 *   await svc.init({ url: 'https://push.example.com', key: 'sdk_…', worker: '/sw.js' });
 *   await svc.login('user-42');
 *   svc.setTags({ plan: 'pro' });
 *   button.onclick = () => svc.subscribe();
 */
import { SvcError } from './errors.ts';
import { pushSubscription, subscribeOp } from './push.ts';
import { Sender } from './sender.ts';
import { enqueue, newestId, oldestId, readConfig, writeConfig, type BatchOp, type Config, type QueuedOp, type SubscriptionType } from './store.ts';

export { SvcError };
export type { SubscriptionType };

export interface InitOptions {
  /** The engine's base URL (`https://push.example.com`). */
  url: string;
  /** The project's SDK key (never a REST key: it ships in the page). */
  key: string;
  /** A service worker to register: this SDK's worker or one that imports it. Leave it out when the page registers its own. */
  worker?: string;
  /** The worker's scope (default: the browser's, the worker's folder). */
  scope?: string;
  /** Called for each operation the engine refused (dropped, never retried); by default they are logged. */
  onError?: (error: SvcError) => void;
}

/** A tag value: a string, a number, or null (or "") to delete the tag. */
export type Tags = Record<string, string | number | null>;

let sender: Sender | null = null;
let report: (error: SvcError) => void = (e) => console.warn(`svc: ${e.code}: ${e.message}`, e.op);

/** Sets the engine and key, and sends what earlier pages of this origin left queued. */
export async function init(options: InitOptions): Promise<void> {
  if (!/^https?:\/\/[^/]+/.test(options.url ?? '')) throw new SvcError('invalid_argument', 'url must be the http(s) base URL of the engine');
  if (!options.key) throw new SvcError('invalid_argument', 'key must be the project’s SDK key');
  await writeConfig({ url: options.url.replace(/\/+$/, ''), key: options.key });
  if (options.onError) report = options.onError;
  // One sender a page, however often init is called.
  if (!sender) {
    const own = new Sender((e) => report(e));
    addEventListener('online', () => {
      own.wake();
      void own.kick();
    });
    sender = own;
  }
  const own = sender;
  if (options.worker && 'serviceWorker' in navigator) {
    await navigator.serviceWorker.register(options.worker, options.scope ? { scope: options.scope } : {});
  }
  void own.kick();
}

/** Names the user of this browser; later calls write to them. `identityHash` when the project verifies identity (computed by your backend). */
export async function login(externalId: string, identityHash?: string): Promise<void> {
  if (typeof externalId !== 'string' || externalId.length < 1 || externalId.length > 128) {
    throw new SvcError('invalid_argument', 'externalId must be 1 to 128 characters');
  }
  const user = identityHash ? { external_id: externalId, identity_hash: identityHash } : { external_id: externalId };
  await writeConfig({ user });
  await queue({ op: 'identify' });
}

/** Forgets the user: later writes need a login. The browser's push subscription stays with the user it was registered for (see unsubscribe). */
export async function logout(): Promise<void> {
  await writeConfig({ user: null });
}

/** Merges tags into the user's (a null or "" value deletes the tag). */
export const setTags = (tags: Tags): Promise<void> => queue({ op: 'tags', tags });

/** Records an event, once however often it is retried (its idempotency key is kept with it). */
export function track(name: string, properties?: Record<string, string | number>): Promise<void> {
  const event: Omit<BatchOp, 'external_id'> = { op: 'event', name, idempotency_key: crypto.randomUUID(), timestamp: new Date().toISOString() };
  return queue(properties ? { ...event, properties } : event);
}

/** Stops sends of one subscription type to the user (default WEB_PUSH); sent in its place in the queue. */
export const optOut = (type: SubscriptionType = 'WEB_PUSH'): Promise<void> => queue({ consent: 'opt-out', subscription_type: type });

/** Lifts an opt-out (default WEB_PUSH). */
export const optIn = (type: SubscriptionType = 'WEB_PUSH'): Promise<void> => queue({ consent: 'opt-in', subscription_type: type });

/** Asks the browser for the permission to show notifications; call it from a click or key press, never on load. */
export async function requestPermission(): Promise<NotificationPermission> {
  if (!('Notification' in globalThis)) throw new SvcError('push_unsupported', 'This browser has no notifications');
  if (Notification.permission !== 'default') return Notification.permission;
  if (navigator.userActivation && !navigator.userActivation.isActive) {
    throw new SvcError('no_user_gesture', 'requestPermission must be called from a user gesture (a click, a key press)');
  }
  return Notification.requestPermission();
}

/** Subscribes this browser to Web Push with the project's VAPID key and registers it for the user; resolves with the endpoint. */
export async function subscribe(): Promise<string> {
  const config = await ready();
  if (!config.user) throw notLoggedIn();
  if ((await requestPermission()) !== 'granted') throw new SvcError('permission_denied', 'The user did not allow notifications');
  const registration = await worker();
  const vapid = await webPushKey(config);
  const sub = await pushSubscription(registration.pushManager, vapid);
  await queue(subscribeOp(config.user, sub));
  return sub.endpoint;
}

/** Ends this browser's push subscription; the engine retires it when the push service next refuses it. */
export async function unsubscribe(): Promise<void> {
  const sub = await (await worker()).pushManager.getSubscription();
  await sub?.unsubscribe();
}

/** Resolves once every operation made before the call has been answered (sent, or refused and reported). */
export async function flushed(): Promise<void> {
  const last = await newestId();
  const own = sender;
  while ((await oldestId()) <= last) {
    await Promise.race([own?.kick(), new Promise((r) => setTimeout(r, 250))]);
  }
}

async function ready(): Promise<Config> {
  const config = sender ? await readConfig() : undefined;
  if (!config) throw new SvcError('not_initialized', 'Call init({ url, key }) first');
  return config;
}

const notLoggedIn = (): SvcError => new SvcError('not_logged_in', 'Call login(externalId) first');

/** Queues one operation for the logged-in user and starts the sender. */
async function queue(op: Omit<BatchOp, 'external_id'> | Omit<QueuedOp, 'external_id'>): Promise<void> {
  const config = await ready();
  if (!config.user) throw notLoggedIn();
  await enqueue([{ ...op, ...config.user } as QueuedOp]);
  void sender?.kick();
}

async function worker(): Promise<ServiceWorkerRegistration> {
  if (!('serviceWorker' in navigator) || !('PushManager' in globalThis)) throw new SvcError('push_unsupported', 'This browser has no Web Push');
  if (!(await navigator.serviceWorker.getRegistration())) {
    throw new SvcError('no_worker', 'No service worker: pass init({ worker }) or register one that imports the SDK’s worker');
  }
  return navigator.serviceWorker.ready;
}

/** The project's VAPID public key and receipt setting, asked at each subscribe and kept for the worker (the last known when offline). */
async function webPushKey(config: Config): Promise<string> {
  const answer = await fetch(`${config.url}/api/sdk/web-push`, { headers: { Authorization: `Bearer ${config.key}` } }).catch(() => null);
  if (!answer && config.vapid) return config.vapid;
  if (!answer) throw new SvcError('unavailable', 'The engine did not answer', 0);
  const body = (await answer.json().catch(() => ({}))) as { vapid_public_key?: string; delivered_receipts?: boolean; errors?: { code: string; message: string }[] };
  if (!answer.ok || !body.vapid_public_key) {
    const e = body.errors?.[0];
    throw new SvcError(e?.code ?? 'unavailable', e?.message ?? `The engine answered ${answer.status}`, answer.status);
  }
  await writeConfig({ vapid: body.vapid_public_key, delivered: body.delivered_receipts === true });
  return body.vapid_public_key;
}
