import { randomUUID } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http2';
import { deliveryCode } from '../../../schemas/delivery-codes.ts';
import { DefaultBaseUrls, type ApnsCredentials } from '../../../schemas/providers.ts';
import { apnsTokens, type ApnsTokenCache } from './apns-token.ts';
import { H2Pool, type H2PoolOptions, type H2Response } from './h2-pool.ts';
import {
  answered,
  DEFAULT_TIMEOUT_MS,
  elapsed,
  closedFailure,
  failure,
  InFlight,
  parseJson,
  retryAfterMs,
  transportFailure,
  type ClientOptions,
  type ProviderClient,
  type PushMessage,
  type SendResult,
  type Target,
} from './provider.ts';

export const APNS_SANDBOX_URL = 'https://api.sandbox.push.apple.com';
/** At most 4096 bytes of JSON (docs/providers.md#apns). */
export const APNS_MAX_PAYLOAD = 4096;

export interface ApnsClientOptions extends ClientOptions {
  /** The pool's limits (connections, queue); see H2PoolOptions. */
  pool?: Omit<H2PoolOptions, 'ca' | 'timeoutMs'>;
  /** Provider-token cache; the process-wide one unless a test brings its own clock. */
  tokens?: ApnsTokenCache;
}

/**
 * The request body: the app's data keys, `aps` (which a data key may not replace), and the
 * options APNs takes (docs/providers.md#what-each-provider-gets): `url` and `attachments` for the
 * app's notification service extension, which `mutable-content` wakes.
 */
export function apnsPayload(message: PushMessage): string {
  const data = { ...message.data };
  delete data.aps;
  const o = message.options;
  const background = message.title === null && message.body === '';
  const aps: Record<string, unknown> = background ? { 'content-available': 1 } : { alert: alertOf(message), sound: o.ios_sound ?? 'default' };
  if (o.ios_badgeType === 'SetTo' && o.ios_badgeCount !== undefined) aps.badge = o.ios_badgeCount;
  if (o.thread_id !== undefined) aps['thread-id'] = o.thread_id;
  if (o.ios_category !== undefined) aps.category = o.ios_category;
  if (o.content_available === true) aps['content-available'] = 1;
  if (o.mutable_content === true || o.ios_attachments !== undefined) aps['mutable-content'] = 1;
  if (o.ios_interruption_level !== undefined && !background) aps['interruption-level'] = o.ios_interruption_level.replace('_', '-');
  const url = o.app_url ?? o.url;
  return JSON.stringify({ aps, ...data, ...(url === undefined ? {} : { url }), ...(o.ios_attachments === undefined ? {} : { attachments: o.ios_attachments }) });
}

function alertOf(message: PushMessage): Record<string, string> {
  const alert: Record<string, string> = message.title === null ? {} : { title: message.title };
  if (message.subtitle !== null) alert.subtitle = message.subtitle;
  alert.body = message.body;
  return alert;
}

/** The request body of each message, encoded once: a message is shared by the users of one locale (render.ts). */
const bodies = new WeakMap<PushMessage, Buffer>();

function bodyOf(message: PushMessage): Buffer {
  let body = bodies.get(message);
  if (body === undefined) {
    body = Buffer.from(apnsPayload(message));
    bodies.set(message, body);
  }
  return body;
}

/** The answer when no provider token can be signed (a bad key): nothing is sent. */
function invalidToken(): SendResult {
  return failure(deliveryCode('apns', 403, 'InvalidProviderToken'), null);
}

/**
 * APNs over pooled HTTP/2 with token authentication. All clients of one team+key share one
 * provider token (ApnsTokenCache); an ExpiredProviderToken answer renews it (at most every 20 min)
 * and retries the send once; a 503 or IdleTimeout answer retires the connection that gave it.
 */
export class ApnsClient implements ProviderClient {
  readonly #creds: ApnsCredentials;
  readonly #pool: H2Pool;
  readonly #inflight = new InFlight();
  #closing: Promise<void> | null = null;
  readonly #tokens: ApnsTokenCache;
  #bearer: { jwt: string; header: string } | null = null;

  constructor(creds: ApnsCredentials, opts: ApnsClientOptions = {}) {
    this.#creds = creds;
    this.#tokens = opts.tokens ?? apnsTokens;
    const base = creds.base_url ?? (creds.environment === 'sandbox' ? APNS_SANDBOX_URL : (DefaultBaseUrls.apns as string));
    this.#pool = new H2Pool(base, { ...opts.pool, ca: opts.ca, timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS });
  }

  /** The connection pool (tests read its stats). */
  get pool(): H2Pool {
    return this.#pool;
  }

  send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    if (this.#inflight.closing) return Promise.resolve(closedFailure());
    return this.#inflight.track(this.#send(target, message, signal));
  }

  async #send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    const body = bodyOf(message);
    if (body.length > APNS_MAX_PAYLOAD) return failure(deliveryCode('apns', 413, 'PayloadTooLarge'), null);
    // The token in force needs no await: a send waits only while one is being signed.
    const jwt = this.#tokens.current(this.#creds) ?? (await this.#signed());
    if (jwt === null) return invalidToken();
    // A retry with a renewed token is the same notification: the same apns-id.
    const id = randomUUID();
    const first = await this.#attempt(target, message, body, jwt, id, signal);
    if (first.ok || first.code !== 'apns_403_ExpiredProviderToken') return first;
    // REAUTH: re-sign only if the token is old enough (else APNs answers 429
    // TooManyProviderTokenUpdates), then retry once; a second refusal goes back to the caller.
    if (!this.#tokens.expired(this.#creds, jwt)) return first;
    const renewed = await this.#signed();
    return renewed === null ? invalidToken() : this.#attempt(target, message, body, renewed, id, signal);
  }

  /** Refuses new sends, lets running ones finish, then closes the connections. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#inflight.drain().then(() => this.#pool.close());
    return this.#closing;
  }

  /** A token signed now if none is in force; null when it cannot be signed. */
  #signed(): Promise<string | null> {
    return this.#tokens.token(this.#creds).catch(() => null);
  }

  /** `authorization` of the token in force, built once a token rather than once a send. */
  #authorization(jwt: string): string {
    if (this.#bearer?.jwt !== jwt) this.#bearer = { jwt, header: `bearer ${jwt}` };
    return this.#bearer.header;
  }

  /** The headers of one request, in the object the pool completes and sends (h2-pool.ts). */
  #headers(target: Target, message: PushMessage, jwt: string, id: string): OutgoingHttpHeaders {
    const background = message.title === null && message.body === '';
    const headers: OutgoingHttpHeaders = {
      ':path': `/3/device/${target.token}`,
      authorization: this.#authorization(jwt),
      'apns-topic': this.#creds.topic,
      'apns-push-type': background ? 'background' : 'alert',
      'apns-id': id,
      'apns-expiration': String(message.ttlSeconds > 0 ? Math.floor(Date.now() / 1000) + message.ttlSeconds : 0),
      // Apple: background pushes must use priority 5.
      'apns-priority': message.priority === 'high' && !background ? '10' : '5',
      'content-type': 'application/json',
    };
    // A collapse id over 64 bytes is refused (BadCollapseId); sending without it still delivers.
    if (message.collapseId && Buffer.byteLength(message.collapseId) <= 64) headers['apns-collapse-id'] = message.collapseId;
    return headers;
  }

  async #attempt(target: Target, message: PushMessage, body: Buffer, jwt: string, id: string, signal?: AbortSignal): Promise<SendResult> {
    const headers = this.#headers(target, message, jwt, id);
    const start = performance.now();
    let answer: H2Response;
    try {
      answer = await this.#pool.request(headers, body, signal);
    } catch (err) {
      return transportFailure(err, elapsed(start));
    }
    const latencyMs = elapsed(start);
    if (answer.status === 200) {
      const given = answer.headers['apns-id'];
      return { ok: true, providerMessageId: typeof given === 'string' ? given : id, latencyMs };
    }
    const parsed = parseJson(answer.body) as { reason?: unknown; timestamp?: unknown } | null;
    const reason = typeof parsed?.reason === 'string' ? parsed.reason : null;
    if (answer.status === 503 || reason === 'IdleTimeout' || reason === 'Shutdown') this.#pool.replace(answer.conn);
    const result = answered('apns', answer.status, reason, latencyMs, retryAfterMs(answer.headers['retry-after']));
    if (answer.status === 410 && typeof parsed?.timestamp === 'number') result.invalidSinceMs = parsed.timestamp;
    return result;
  }
}
