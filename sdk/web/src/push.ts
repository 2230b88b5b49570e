import type { BatchOp, Config } from './store.ts';

/** The bytes of a base64url string (a VAPID public key). */
export function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const plain = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(plain, (c) => c.charCodeAt(0));
}

/** The subscribe operation of a browser's push subscription for the logged-in user. */
export function subscribeOp(user: NonNullable<Config['user']>, sub: PushSubscription): BatchOp {
  const json = sub.toJSON();
  return {
    op: 'subscribe',
    ...user,
    type: 'WEB_PUSH',
    token: json.endpoint ?? sub.endpoint,
    web_auth: json.keys?.['auth'] ?? '',
    web_p256: json.keys?.['p256dh'] ?? '',
  };
}

/** A subscription made with the project's VAPID key, the one the browser has when it was made with it. */
export async function pushSubscription(manager: PushManager, vapid: string): Promise<PushSubscription> {
  const key = fromBase64Url(vapid);
  const existing = await manager.getSubscription();
  const same = (have: ArrayBuffer | null | undefined): boolean => !!have && new Uint8Array(have).join() === key.join();
  if (existing && same(existing.options.applicationServerKey)) return existing;
  await existing?.unsubscribe();
  return manager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
}
