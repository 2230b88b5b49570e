import { importPKCS8, SignJWT } from 'jose';
import { request, type Dispatcher } from 'undici';
import type { FcmCredentials } from '../../../schemas/providers.ts';
import { parseJson, retryAfterMs } from './provider.ts';

export type ServiceAccount = FcmCredentials['service_account'];

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
/** An access token is used until this long before it expires, ms. */
export const FCM_TOKEN_MARGIN_MS = 5 * 60_000;

/** The token endpoint refused the service account or failed; `status` is its HTTP status. */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterMs: number | null,
  ) {
    super(message);
    this.name = 'OAuthError';
  }
}

interface Entry {
  token: string;
  expiresAt: number;
}

/**
 * OAuth access tokens of FCM service accounts (RFC 7523 JWT bearer grant), one per account for the
 * whole process, used until 5 minutes before they expire; concurrent sends share one fetch.
 */
export class FcmTokenCache {
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<string>>();
  /** Token requests made (tests and metrics). */
  fetches = 0;

  constructor(readonly now: () => number = Date.now) {}

  async token(sa: ServiceAccount, dispatcher: Dispatcher, timeoutMs: number): Promise<string> {
    const id = keyOf(sa);
    const entry = this.#entries.get(id);
    if (entry && entry.expiresAt - FCM_TOKEN_MARGIN_MS > this.now()) return entry.token;
    let pending = this.#pending.get(id);
    if (!pending) {
      pending = this.#fetch(sa, dispatcher, timeoutMs).finally(() => this.#pending.delete(id));
      this.#pending.set(id, pending);
    }
    return pending;
  }

  /** FCM refused `token` (401 UNAUTHENTICATED): the next send fetches a new one. */
  invalidate(sa: ServiceAccount, token: string): void {
    const id = keyOf(sa);
    if (this.#entries.get(id)?.token === token) this.#entries.delete(id);
  }

  async #fetch(sa: ServiceAccount, dispatcher: Dispatcher, timeoutMs: number): Promise<string> {
    this.fetches += 1;
    const iat = Math.floor(this.now() / 1000);
    const key = await importPKCS8(sa.private_key, 'RS256');
    const assertion = await new SignJWT({ scope: FCM_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: sa.private_key_id })
      .setIssuer(sa.client_email)
      .setAudience(sa.token_uri)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(key);
    const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();
    const res = await request(sa.token_uri, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.body.text();
    const json = parseJson(text) as { access_token?: unknown; expires_in?: unknown; error?: unknown } | null;
    if (res.statusCode !== 200 || typeof json?.access_token !== 'string') {
      throw new OAuthError(res.statusCode, `token_uri answered ${res.statusCode} ${typeof json?.error === 'string' ? json.error : ''}`.trim(), retryAfterMs(res.headers['retry-after']));
    }
    const expiresIn = typeof json.expires_in === 'number' ? json.expires_in : 3600;
    this.#entries.set(keyOf(sa), { token: json.access_token, expiresAt: this.now() + expiresIn * 1000 });
    return json.access_token;
  }
}

const keyOf = (sa: ServiceAccount): string => `${sa.token_uri} ${sa.client_email} ${sa.private_key_id}`;

/** The process-wide cache every FCM client uses unless a test brings its own. */
export const fcmTokens = new FcmTokenCache();
