import { Agent } from 'undici';
import { DeliveryCodes } from '../../../schemas/delivery-codes.ts';
import { DefaultBaseUrls, type FcmCredentials } from '../../../schemas/providers.ts';
import { fcmTokens, OAuthError, type FcmTokenCache } from './fcm-token.ts';
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

export interface FcmClientOptions extends ClientOptions {
  pool?: Omit<H2PoolOptions, 'ca' | 'timeoutMs'>;
  /** OAuth token cache; the process-wide one unless a test brings its own. */
  tokens?: FcmTokenCache;
}

const FCM_ERROR_TYPE = 'type.googleapis.com/google.firebase.fcm.v1.FcmError';

/**
 * FCM `data` takes string values only (a number is a 400): everything else is sent as JSON. The
 * options FCM takes go in `android.notification` (docs/providers.md#what-each-provider-gets).
 */
export function fcmBody(token: string, message: PushMessage): string {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(message.data)) data[key] = typeof value === 'string' ? value : JSON.stringify(value);
  const o = message.options;
  const url = o.app_url ?? o.url;
  if (url !== undefined) data.url = url;
  const notification = message.title === null ? { body: message.body } : { title: message.title, body: message.body };
  const android: Record<string, unknown> = { priority: message.priority === 'high' ? 'HIGH' : 'NORMAL', ttl: `${Math.max(0, Math.floor(message.ttlSeconds))}s` };
  if (message.collapseId) android.collapse_key = message.collapseId;
  const shown: Record<string, string> = {};
  if (o.android_channel_id !== undefined) shown.channel_id = o.android_channel_id;
  if (o.android_sound !== undefined) shown.sound = o.android_sound;
  if (o.big_picture !== undefined) shown.image = o.big_picture;
  if (url !== undefined) shown.click_action = url;
  if (Object.keys(shown).length > 0) android.notification = shown;
  return JSON.stringify({ message: { token, notification, data, android } });
}

interface FcmErrorBody {
  error?: { code?: number; message?: string; status?: string; details?: { '@type'?: string; errorCode?: string }[] };
}

/**
 * FCM HTTP v1 over pooled HTTP/2 with service-account OAuth. The access token is shared by every
 * client of the account (FcmTokenCache); a 401 UNAUTHENTICATED without an FcmError detail means it
 * expired: it is dropped, a new one fetched, and the send retried once.
 */
export class FcmClient implements ProviderClient {
  readonly #creds: FcmCredentials;
  readonly #pool: H2Pool;
  readonly #inflight = new InFlight();
  #closing: Promise<void> | null = null;
  readonly #oauth: Agent;
  readonly #tokens: FcmTokenCache;
  readonly #timeoutMs: number;
  readonly #path: string;

  constructor(creds: FcmCredentials, opts: FcmClientOptions = {}) {
    this.#creds = creds;
    this.#tokens = opts.tokens ?? fcmTokens;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#pool = new H2Pool(creds.base_url ?? (DefaultBaseUrls.fcm as string), { ...opts.pool, ca: opts.ca, timeoutMs: this.#timeoutMs });
    this.#oauth = new Agent({ connections: 2, ...(opts.ca ? { connect: { ca: opts.ca } } : {}) });
    this.#path = `/v1/projects/${encodeURIComponent(creds.service_account.project_id)}/messages:send`;
  }

  get pool(): H2Pool {
    return this.#pool;
  }

  send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    if (this.#inflight.closing) return Promise.resolve(closedFailure());
    return this.#inflight.track(this.#send(target, message, signal));
  }

  async #send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    const body = fcmBody(target.token, message);
    const first = await this.#attempt(body, signal);
    if (!first.expired) return first.result;
    this.#tokens.invalidate(this.#creds.service_account, first.expired);
    return (await this.#attempt(body, signal)).result;
  }

  /** Refuses new sends, lets running ones finish, then closes the connections. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#inflight.drain().then(async () => {
      await Promise.all([this.#pool.close(), this.#oauth.close()]);
    });
    return this.#closing;
  }

  async #attempt(body: string, signal?: AbortSignal): Promise<{ result: SendResult; expired: string | null }> {
    let token: string;
    try {
      token = await this.#tokens.token(this.#creds.service_account, this.#oauth, this.#timeoutMs);
    } catch (err) {
      return { result: oauthFailure(err), expired: null };
    }
    const start = performance.now();
    let answer: H2Response;
    try {
      answer = await this.#pool.request({ ':path': this.#path, authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' }, body, signal);
    } catch (err) {
      return { result: transportFailure(err, elapsed(start)), expired: null };
    }
    const latencyMs = elapsed(start);
    if (answer.status === 200) {
      const name = (parseJson(answer.body) as { name?: unknown } | null)?.name;
      return { result: { ok: true, providerMessageId: typeof name === 'string' ? name : null, latencyMs }, expired: null };
    }
    const error = (parseJson(answer.body) as FcmErrorBody | null)?.error;
    const detail = error?.details?.find((d) => d['@type'] === FCM_ERROR_TYPE)?.errorCode;
    const reason = detail ?? error?.status ?? null;
    const result = answered('fcm', answer.status, reason, latencyMs, retryAfterMs(answer.headers['retry-after']), error?.message);
    return { result, expired: answer.status === 401 && !detail ? token : null };
  }
}

function oauthFailure(err: unknown): SendResult {
  if (err instanceof OAuthError) {
    const retry = err.status === 429 || err.status >= 500;
    const def = retry ? DeliveryCodes.fcm_oauth_unavailable : DeliveryCodes.fcm_oauth_failed;
    return failure({ code: retry ? 'fcm_oauth_unavailable' : 'fcm_oauth_failed', action: def.action, hint: def.hint }, null, err.retryAfterMs);
  }
  try {
    return transportFailure(err, null);
  } catch {
    // Not a transport failure: the key would not import or sign. A credential problem, not a bug.
    const def = DeliveryCodes.fcm_oauth_failed;
    return failure({ code: 'fcm_oauth_failed', action: def.action, hint: def.hint }, null);
  }
}
