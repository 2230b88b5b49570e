import webpush from 'web-push';
import type { WebPushCredentials } from '../../../schemas/providers.ts';

/**
 * How long one signed VAPID header is sent again, ms. web-push signs tokens valid for 12 hours,
 * so a reused one has at least 11 left; RFC 8292 allows up to 24 and lets a server reuse a token
 * for many requests (section 2).
 */
const REUSE_MS = 3_600_000;
/** Push services one client signs for at once: a few in practice, bounded whatever endpoints SDKs register. */
const MAX_AUDIENCES = 256;

/**
 * The `Authorization: vapid t=<JWT>, k=<key>` header of one credential, signed (by web-push) once
 * per push service origin and hour rather than per push: the signature cost more than the
 * encryption (docs/performance.md, "A Web Push signed once an hour").
 */
export class VapidHeaders {
  readonly #signed = new Map<string, { authorization: string; until: number }>();

  constructor(private readonly creds: WebPushCredentials) {}

  /** The header for `endpoint`'s push service; throws as web-push does for malformed keys. */
  authorization(endpoint: URL, now = Date.now()): string {
    const audience = endpoint.origin;
    const held = this.#signed.get(audience);
    if (held !== undefined && held.until > now) return held.authorization;
    const { subject, vapid_public_key: publicKey, vapid_private_key: privateKey } = this.creds;
    const { Authorization: authorization } = webpush.getVapidHeaders(audience, subject, publicKey, privateKey, 'aes128gcm');
    if (this.#signed.size >= MAX_AUDIENCES) this.#signed.clear();
    this.#signed.set(audience, { authorization, until: now + REUSE_MS });
    return authorization;
  }
}
