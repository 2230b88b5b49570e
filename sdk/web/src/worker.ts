/**
 * The SDK's service worker: register it as the page's worker, or pull it into your own with
 * `importScripts('<engine>/sdk/web-sw.js')`. It handles only the engine's pushes and
 * notifications (those carrying its message id), so it sits beside other push code.
 */
import { pushSubscription, subscribeOp } from './push.ts';
import { Sender } from './sender.ts';
import { enqueue, readConfig } from './store.ts';

declare const self: ServiceWorkerGlobalScope;

/** The engine's Web Push payload (docs/providers.md#web-push). */
interface Payload {
  notification_id: string;
  title?: string;
  body?: string;
  data?: { svc_message_id?: string };
  icon?: string;
  image?: string;
  badge?: string;
  url?: string;
  tag?: string;
  actions?: { action: string; title: string; icon?: string; url?: string }[];
}

/** What a shown notification keeps for its click. */
interface Shown {
  id: string;
  url: string | undefined;
  actions: Record<string, string | undefined>;
}

const sender = new Sender((e) => console.warn(`svc: ${e.code}: ${e.message}`, e.op));

function parse(data: PushMessageData | null): Payload | null {
  try {
    const p = data?.json() as Partial<Payload> | undefined;
    return typeof p?.notification_id === 'string' ? (p as Payload) : null;
  } catch {
    return null;
  }
}

async function receipt(id: string, kind: 'delivered' | 'clicked'): Promise<void> {
  const user = (await readConfig())?.user;
  if (!user) return;
  await enqueue([{ op: 'receipt', ...user, svc_message_id: id, kind, timestamp: new Date().toISOString() }]);
  await sender.kick();
}

async function show(p: Payload): Promise<void> {
  const id = p.data?.svc_message_id ?? p.notification_id;
  const shown: Shown = { id, url: p.url, actions: Object.fromEntries((p.actions ?? []).map((a) => [a.action, a.url])) };
  const options = { body: p.body, icon: p.icon, image: p.image, badge: p.badge, tag: p.tag, data: { svc: shown }, actions: p.actions?.map(({ action, title, icon }) => ({ action, title, icon })) };
  await self.registration.showNotification(p.title ?? '', options as NotificationOptions);
  if ((await readConfig())?.delivered) await receipt(id, 'delivered');
}

/** Focuses a tab at `url`, else opens one. */
async function open(url: string): Promise<unknown> {
  const target = new URL(url, self.location.origin).href;
  const tabs = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const tab = tabs.find((c) => c.url === target);
  return tab ? tab.focus() : self.clients.openWindow(target);
}

async function click(shown: Shown, action: string): Promise<void> {
  const sent = receipt(shown.id, 'clicked');
  const url = (action && shown.actions[action]) || shown.url;
  if (url) await open(url).catch((err: unknown) => console.warn('svc: could not open', url, err));
  await sent;
}

/** Registers the browser's new subscription (when the browser replaced it) for the logged-in user. */
async function resubscribe(next: PushSubscription | null | undefined): Promise<void> {
  const config = await readConfig();
  if (!config?.user || !config.vapid) return;
  const sub = next ?? (await pushSubscription(self.registration.pushManager, config.vapid));
  await enqueue([subscribeOp(config.user, sub)]);
  await sender.kick();
}

self.addEventListener('push', (event) => {
  const payload = parse(event.data);
  if (payload) event.waitUntil(show(payload));
});

self.addEventListener('notificationclick', (event) => {
  const shown = (event.notification.data as { svc?: Shown } | null)?.svc;
  if (!shown) return;
  event.notification.close();
  event.waitUntil(click(shown, event.action));
});

self.addEventListener('pushsubscriptionchange', (event) => {
  const change = event as ExtendableEvent & { newSubscription?: PushSubscription | null };
  change.waitUntil(resubscribe(change.newSubscription));
});
