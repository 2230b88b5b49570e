import type { NotificationOptions } from '../../../schemas/notifications.ts';
import type { OutboundPolicy } from '../../../engine/infra/outbound/guard.ts';
import { deliveryCode, ownCode, type DeliveryAnswer, type DeliveryProvider } from '../../../schemas/delivery-codes.ts';

/** One message as the dispatch actor hands it to a provider client. */
export interface PushMessage {
  notificationId: string;
  title: string | null;
  body: string;
  /** Custom keys for the app; includes `svc_message_id`. */
  data: Record<string, unknown>;
  priority: 'high' | 'normal';
  ttlSeconds: number;
  collapseId: string | null;
  /** The notification's subtitle in the user's locale (APNs only). */
  subtitle: string | null;
  /** What the notification asks of each provider besides its text (docs/providers.md#what-each-provider-gets). */
  options: NotificationOptions;
}

/** One subscription to send to (schemas/sdk.ts token formats; WEB_PUSH token = endpoint). */
export interface Target {
  type: 'IOS_PUSH' | 'ANDROID_PUSH' | 'WEB_PUSH' | 'SMS' | 'EMAIL';
  token: string;
  web_auth?: string;
  web_p256?: string;
}

export type SendFailure = {
  ok: false;
  code: string;
  action: 'RETRY' | 'REAUTH' | 'DROP' | 'FAIL';
  hint: string;
  retryAfterMs: number | null;
  /** Null when no request reached the provider (refused locally, queue full, canceled). */
  latencyMs: number | null;
  /** APNs 410 only: when the token stopped being valid (ms); a re-registration after it is live. */
  invalidSinceMs?: number;
  /** Nothing left the engine because the target is refused (endpoint_refused): recorded `skipped`. */
  skipped?: true;
};

export type SendResult = { ok: true; providerMessageId: string | null; latencyMs: number } | SendFailure;

/**
 * A provider client: one per (project, provider) credential, long-lived, safe for concurrent sends.
 * `send` never throws for a provider or transport failure: it answers a SendResult whose `action`
 * tells the dispatch actor what to do. `close` is idempotent and lets in-flight sends finish.
 */
export interface ProviderClient {
  send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult>;
  close(): Promise<void>;
}

/** Options every client takes (engine config: PROVIDER_CA_FILE, provider timeout). */
export interface ClientOptions {
  /** Extra trusted CA (PEM) for TLS connections to the provider; the system roots otherwise. */
  ca?: string | Buffer;
  /** Longest one request may take, from the send until the whole answer is read, ms. Default 10 000. */
  timeoutMs?: number;
  /** Which addresses a caller-chosen URL (a Web Push endpoint) may reach; default: public ones only. */
  outbound?: OutboundPolicy;
}

export const DEFAULT_TIMEOUT_MS = 10_000;

/** A transport failure: no answer was read. `kind` is the delivery code it is recorded as. */
export class TransportError extends Error {
  constructor(
    readonly kind: 'timeout' | 'connection_error' | 'queue_full' | 'canceled',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TransportError';
  }
}

export function failure(answer: DeliveryAnswer, latencyMs: number | null, retryAfterMs: number | null = null): SendFailure {
  if (answer.action === 'OK') throw new Error(`failure() of an accepted answer ${answer.code}`);
  return { ok: false, code: answer.code, action: answer.action, hint: answer.hint, retryAfterMs, latencyMs };
}

/** The failure of a provider answer. */
export function answered(
  provider: DeliveryProvider,
  status: number,
  reason: string | number | null,
  latencyMs: number,
  retryAfterMs: number | null,
  message?: string,
): SendFailure {
  return failure(deliveryCode(provider, status, reason, message), latencyMs, retryAfterMs);
}

/** Maps anything a transport threw to a SendFailure; a bug (not a transport failure) is rethrown. */
export function transportFailure(err: unknown, latencyMs: number | null): SendFailure {
  if (refusedByGuard(err)) return refusedTarget();
  const kind = transportKind(err);
  if (!kind) throw err;
  return failure(ownCode(kind), kind === 'queue_full' || kind === 'canceled' ? null : latencyMs);
}

/** A target the outbound guard refuses (engine/infra/outbound/guard.ts): nothing is sent, recorded `skipped`. */
export function refusedTarget(): SendFailure {
  return { ...failure(ownCode('endpoint_refused'), null), skipped: true };
}

/** The guard's lookup refused every address of the name; undici wraps it in its own error at times. */
function refusedByGuard(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if ((e as { code?: unknown }).code === 'EOUTBOUND_REFUSED') return true;
  return false;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);
const SOCKET_CODES = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ERR_HTTP2_SESSION_ERROR',
  'ERR_HTTP2_STREAM_ERROR',
  'ERR_HTTP2_GOAWAY_SESSION',
  'ERR_HTTP2_STREAM_CANCEL',
  'ERR_HTTP2_ERROR',
  'ERR_HTTP2_INVALID_SESSION',
]);

function transportKind(err: unknown): TransportError['kind'] | null {
  if (err instanceof TransportError) return err.kind;
  if (!(err instanceof Error)) return null;
  if (err.name === 'TimeoutError') return 'timeout';
  if (err.name === 'AbortError') return 'canceled';
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (TIMEOUT_CODES.has(code)) return 'timeout';
    // TLS trust failures (DEPTH_ZERO_SELF_SIGNED_CERT, UNABLE_TO_VERIFY_LEAF_SIGNATURE, ...) are
    // connection errors too: the hint points at PROVIDER_CA_FILE.
    if (SOCKET_CODES.has(code) || /^ERR_(TLS|SSL)|CERT|SELF_SIGNED|UNABLE_TO_/.test(code)) return 'connection_error';
  }
  return null;
}

export { retryAfterMs } from '../../../engine/infra/outbound/retry-after.ts';

/** SendGrid's `X-RateLimit-Reset` (epoch seconds) in ms from now; null when absent or unreadable. */
export function rateLimitResetMs(value: string | string[] | undefined | null, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw || !/^\d+$/.test(raw.trim())) return null;
  return Math.max(0, Number(raw.trim()) * 1000 - now);
}

/** One AbortSignal that fires on the caller's signal or after `timeoutMs` (as a TimeoutError). */
export function deadline(timeoutMs: number, signal?: AbortSignal): AbortSignal {
  const timer = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timer]) : timer;
}

/** Reads a JSON body, or null when it is empty or not JSON (error bodies are advisory). */
export function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

export const elapsed = (start: number): number => Math.max(0, Math.round(performance.now() - start));

/**
 * Sends a client has started and not finished, so `close()` can refuse new ones and wait for
 * those (a send may still be signing a token before it reaches the connection pool).
 */
export class InFlight {
  #count = 0;
  #idle: (() => void)[] = [];
  closing = false;

  /**
   * Counts `send` until it settles, and answers it as it settles. The caller starts the send
   * synchronously before this call, so no `drain` can come between (an async wrapper would cost a
   * frame per send: docs/performance.md, "The send path's own allocations").
   */
  track<T>(send: Promise<T>): Promise<T> {
    this.#count += 1;
    return send.then(this.#settled, this.#failed);
  }

  // Bound once, so that a send allocates no closures for them.
  readonly #settled = <T>(value: T): T => {
    this.#leave();
    return value;
  };

  readonly #failed = (err: unknown): never => {
    this.#leave();
    throw err;
  };

  #leave(): void {
    this.#count -= 1;
    if (this.#count === 0) for (const wake of this.#idle.splice(0)) wake();
  }

  /** Marks the client closing and resolves once no send is running. */
  async drain(): Promise<void> {
    this.closing = true;
    while (this.#count > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }
}

/** The answer to a send on a closed client. */
export const closedFailure = (): SendFailure => failure(ownCode('connection_error'), null);
