import webpush from 'web-push';
import { deliveryCode } from '../../../schemas/delivery-codes.ts';
import type { WebPushCredentials } from '../../../schemas/providers.ts';
import { guardedLookup, refusedUrl, type OutboundPolicy } from '../../../engine/infra/outbound/guard.ts';
import { Http1, type Http1Answer } from './http1.ts';
import { VapidHeaders } from './vapid.ts';
import {
  answered,
  elapsed,
  failure,
  refusedTarget,
  retryAfterMs,
  transportFailure,
  type ClientOptions,
  type ProviderClient,
  type PushMessage,
  type SendResult,
  type Target,
} from './provider.ts';

/**
 * Largest plaintext that fits the 4096 bytes push services must accept (RFC 8030 section 7.2):
 * aes128gcm adds an 86-byte header (salt, record size, 65-byte key), a 16-byte tag and a
 * 1-byte padding delimiter (RFC 8188, 8291).
 */
export const WEBPUSH_MAX_PLAINTEXT = 4096 - 86 - 16 - 1;

const PUBLIC_ONLY: OutboundPolicy = { allowPrivate: false, webPushHosts: undefined };

/** RFC 8030 section 5.4: a Topic is at most 32 characters of the URL-safe base64 alphabet. */
const TOPIC = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * The decrypted payload a service worker receives: the text, the data, and the options of a
 * browser notification (docs/providers.md#what-each-provider-gets), named as showNotification's.
 */
export function webPushPayload(message: PushMessage): string {
  const o = message.options;
  const shown = {
    icon: o.chrome_web_icon,
    image: o.chrome_web_image,
    badge: o.chrome_web_badge,
    url: o.web_url ?? o.url,
    actions: o.web_buttons?.map((b) => ({ action: b.id, title: b.text, icon: b.icon, url: b.url })),
  };
  // A notification's pushes share a tag, so a retried or repeated one replaces the shown one.
  const tag = message.collapseId ?? message.notificationId;
  return JSON.stringify({ notification_id: message.notificationId, title: message.title, body: message.body, data: message.data, tag, ...shown });
}

/**
 * Web Push (RFC 8030) with VAPID (RFC 8292, the header signed once an hour: ./vapid.ts) and
 * aes128gcm (RFC 8291, web-push's generateRequestDetails), sent over pooled HTTP/1.1. 201 is
 * accepted; 404/410 retire the subscription; 429 and 5xx retry; other 4xx fail.
 */
export class WebPushClient implements ProviderClient {
  readonly #vapid: VapidHeaders;
  readonly #http: Http1;
  readonly #outbound: OutboundPolicy;

  constructor(creds: WebPushCredentials, opts: ClientOptions = {}) {
    this.#vapid = new VapidHeaders(creds);
    this.#outbound = opts.outbound ?? PUBLIC_ONLY;
    this.#http = new Http1({ ca: opts.ca, timeoutMs: opts.timeoutMs, lookup: guardedLookup(this.#outbound) });
  }

  async send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    // Endpoints come from SDK keys, which ship in apps: checked again at each send (docs/api.md#outbound-urls).
    if (refusedUrl(this.#outbound, 'webpush', target.token) !== undefined) return refusedTarget();
    if (!target.web_auth || !target.web_p256) return failure(deliveryCode('webpush', 400, null), null);
    const payload = webPushPayload(message);
    if (Buffer.byteLength(payload) > WEBPUSH_MAX_PLAINTEXT) return failure(deliveryCode('webpush', 413, null), null);
    let details: webpush.RequestDetails;
    let authorization: string;
    try {
      authorization = this.#vapid.authorization(new URL(target.token));
      // No vapidDetails: the header above is signed once an hour, not by this call at each push.
      details = webpush.generateRequestDetails({ endpoint: target.token, keys: { auth: target.web_auth, p256dh: target.web_p256 } }, payload, {
        TTL: Math.max(0, Math.floor(message.ttlSeconds)),
        urgency: message.priority === 'high' ? 'high' : 'normal',
        contentEncoding: 'aes128gcm',
        ...(message.collapseId && TOPIC.test(message.collapseId) ? { topic: message.collapseId } : {}),
      });
    } catch {
      // web-push refuses malformed subscription keys or VAPID keys before any request.
      return failure(deliveryCode('webpush', 400, null), null);
    }
    const headers: Record<string, string> = { authorization };
    for (const [name, value] of Object.entries(details.headers)) if (value !== undefined) headers[name.toLowerCase()] = String(value);
    const start = performance.now();
    let answer: Http1Answer;
    try {
      answer = await this.#http.post(details.endpoint, headers, details.body ?? Buffer.alloc(0), signal);
    } catch (err) {
      return transportFailure(err, elapsed(start));
    }
    const latencyMs = elapsed(start);
    if (answer.status >= 200 && answer.status < 300) {
      const location = answer.headers.location;
      return { ok: true, providerMessageId: typeof location === 'string' ? location : null, latencyMs };
    }
    return answered('webpush', answer.status, null, latencyMs, retryAfterMs(answer.headers['retry-after']));
  }

  close(): Promise<void> {
    return this.#http.close();
  }
}
