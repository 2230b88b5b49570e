/// <reference lib="dom" />
import { createECDH, randomBytes, type ECDH } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import type { Test } from 'tap';
import type * as Sdk from '../../sdk/web/src/index.ts';

/** The SDK as a page sees it once `/sdk/web.js` has run. */
declare global {
  const svc: typeof Sdk;
}

/** A browser's push keys, held by the test: the engine encrypts to them and the test decrypts (RFC 8291). */
export interface BrowserKeys {
  ecdh: ECDH;
  auth: Buffer;
  web_p256: string;
  web_auth: string;
}

export function browserKeys(): BrowserKeys {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, web_p256: ecdh.getPublicKey().toString('base64url'), web_auth: auth.toString('base64url') };
}

/**
 * Stands in for the browser's push service, which headless Chromium cannot reach here: the pages
 * of `context` get, from `pushManager.subscribe`, a subscription with `endpoint` (the Web Push
 * simulator's) and the test's keys. Everything after it (the engine's VAPID-signed, encrypted
 * push) is real; the test decrypts it and hands it to the worker over the DevTools protocol.
 */
export async function fakePushService(context: BrowserContext, sub: { endpoint: string; web_p256: string; web_auth: string }): Promise<void> {
  await context.addInitScript((s) => {
    let current: PushSubscription | null = null;
    PushManager.prototype.getSubscription = () => Promise.resolve(current);
    PushManager.prototype.subscribe = function (options?: PushSubscriptionOptionsInit) {
      const made = {
        endpoint: s.endpoint,
        expirationTime: null,
        options: { applicationServerKey: (options?.applicationServerKey as Uint8Array | undefined)?.buffer ?? null, userVisibleOnly: true },
        getKey: () => null,
        toJSON: () => ({ endpoint: s.endpoint, keys: { p256dh: s.web_p256, auth: s.web_auth } }),
        unsubscribe: () => {
          current = null;
          return Promise.resolve(true);
        },
      };
      current = made as unknown as PushSubscription;
      return Promise.resolve(current);
    };
  }, sub);
}

/** Hands a decrypted push to the worker of the page's origin, as the browser does when its push service delivers one. */
export async function deliverPush(page: Page, origin: string, data: string): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  const registration = new Promise<string>((resolve) => {
    cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations }) => {
      const live = registrations.find((r) => !r.isDeleted && r.scopeURL.startsWith(origin));
      if (live) resolve(live.registrationId);
    });
  });
  await cdp.send('ServiceWorker.enable');
  await cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId: await registration, data });
  await cdp.detach();
}

/** The notifications the origin's worker shows now, as the page reads them. */
export function shownNotifications(page: Page): Promise<{ title: string; body: string; tag: string; data: { svc?: { id: string; url?: string } } }[]> {
  return page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    return (await registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data as { svc?: { id: string; url?: string } } }));
  });
}

export interface LocalServer {
  url: string;
  /** Requests it took, with when they arrived (epoch ms) and the status they were answered with. */
  log: { method: string; path: string; at: number; status: number }[];
}

/**
 * An HTTP server on loopback for the test's life: `route` answers a request itself (true) or
 * leaves it to `upstream`, to which it is forwarded as it is.
 */
export async function localServer(t: Test, upstream: string, route: (req: IncomingMessage, res: ServerResponse) => boolean): Promise<LocalServer> {
  const log: LocalServer['log'] = [];
  const server: Server = createServer((req, res) => {
    const entry = { method: req.method ?? '', path: req.url ?? '', at: Date.now(), status: 0 };
    log.push(entry);
    res.on('finish', () => (entry.status = res.statusCode));
    if (route(req, res)) return;
    const target = new URL(req.url ?? '/', upstream);
    const forward = request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, log };
}
