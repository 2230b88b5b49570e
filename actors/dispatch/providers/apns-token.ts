import { createHash } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';

/** When an APNs provider token is renewed (docs/providers.md#apns: one token per team and key). */
export const APNS_TOKEN_LIMITS = {
  /** A token this old is replaced before the next send, ms. */
  refreshMs: 40 * 60_000,
  /** A token is never replaced younger than this, even on ExpiredProviderToken, ms. */
  minAgeMs: 20 * 60_000,
} as const;

interface Entry {
  jwt: string;
  issuedAt: number;
  /** APNs answered ExpiredProviderToken for this token: replace it once it is old enough. */
  expired: boolean;
  pending: Promise<string> | null;
  /** Which private key signed it; a different key under the same ids replaces it. */
  keyHash: string;
}

/** A token as shared between processes: who signed it (key hash) and when. */
export interface SharedToken {
  jwt: string;
  issuedAt: number;
  keyHash: string;
}

/**
 * Where the processes of a deployment share their tokens (dispatch keeps it in Redis), so that
 * many dispatch workers sign one token per (team, key), not one each.
 */
export interface TokenStore {
  /** The token in force for `id`, if any. */
  get(id: string): Promise<SharedToken | null>;
  /** Offers a freshly signed token; answers the one in force (another process's, if it was first). */
  offer(id: string, token: SharedToken, replacing: string | null): Promise<SharedToken>;
}

export interface ApnsKey {
  team_id: string;
  key_id: string;
  private_key: string;
}

/**
 * ES256 provider tokens, one per (team, key) for the whole process: every connection, client and
 * worker of the process signs with the same token, since APNs answers 429
 * TooManyProviderTokenUpdates when one team+key is re-signed more often than every 20 minutes.
 */
export class ApnsTokenCache {
  readonly #entries = new Map<string, Entry>();
  /** The hash of each key object's private key (a client passes the same object every send). */
  readonly #keyHashes = new WeakMap<ApnsKey, { privateKey: string; hash: string }>();
  #store: TokenStore | null = null;

  constructor(readonly now: () => number = Date.now) {}

  #keyHash(key: ApnsKey): string {
    const known = this.#keyHashes.get(key);
    if (known !== undefined && known.privateKey === key.private_key) return known.hash;
    const hash = createHash('sha256').update(key.private_key).digest('hex');
    this.#keyHashes.set(key, { privateKey: key.private_key, hash });
    return hash;
  }

  /** Shares tokens with the other processes through `store` from now on. */
  share(store: TokenStore): void {
    this.#store = store;
  }

  /** The current token of (team, key) when it needs no signing; null when `token` must be awaited. */
  current(key: ApnsKey): string | null {
    const entry = this.#entries.get(`${key.team_id}:${key.key_id}`);
    return entry !== undefined && !entry.pending && entry.keyHash === this.#keyHash(key) && !this.#due(entry) ? entry.jwt : null;
  }

  /** The current token of (team, key), signed now if there is none or it is due. */
  async token(key: ApnsKey): Promise<string> {
    const id = `${key.team_id}:${key.key_id}`;
    const entry = this.#entries.get(id);
    if (entry?.pending) return entry.pending;
    const inForce = this.current(key);
    if (inForce !== null) return inForce;
    const keyHash = this.#keyHash(key);
    const pending = this.#sign(key, id, keyHash);
    if (entry) entry.pending = pending;
    else this.#entries.set(id, { jwt: '', issuedAt: 0, expired: true, pending, keyHash });
    return pending;
  }

  /**
   * APNs said `jwt` expired. Answers whether a fresh token will be signed for the next send: only
   * when `jwt` is still the current token and at least 20 minutes old.
   */
  expired(key: ApnsKey, jwt: string): boolean {
    const entry = this.#entries.get(`${key.team_id}:${key.key_id}`);
    if (!entry || entry.jwt !== jwt) return true; // already replaced by another send
    entry.expired = true;
    return this.#due(entry);
  }

  /** Age of the current token of (team, key), ms; null when none was signed. */
  ageMs(key: Pick<ApnsKey, 'team_id' | 'key_id'>): number | null {
    const entry = this.#entries.get(`${key.team_id}:${key.key_id}`);
    return entry && entry.jwt ? this.now() - entry.issuedAt : null;
  }

  #due(entry: Entry): boolean {
    const age = this.now() - entry.issuedAt;
    return age >= APNS_TOKEN_LIMITS.refreshMs || (entry.expired && age >= APNS_TOKEN_LIMITS.minAgeMs);
  }

  async #sign(key: ApnsKey, id: string, keyHash: string): Promise<string> {
    try {
      const current = this.#entries.get(id);
      const stale = current?.jwt || null;
      const shared = this.#store === null ? null : await this.#store.get(id);
      if (shared && shared.keyHash === keyHash && shared.jwt !== stale && !this.#due({ ...shared, expired: false, pending: null })) {
        this.#entries.set(id, { ...shared, expired: false, pending: null });
        return shared.jwt;
      }
      const issuedAt = this.now();
      const privateKey = await importPKCS8(key.private_key, 'ES256');
      const jwt = await new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: key.key_id })
        .setIssuer(key.team_id)
        .setIssuedAt(Math.floor(issuedAt / 1000))
        .sign(privateKey);
      const inForce = this.#store === null ? { jwt, issuedAt, keyHash } : await this.#store.offer(id, { jwt, issuedAt, keyHash }, stale);
      this.#entries.set(id, { ...inForce, expired: false, pending: null });
      return inForce.jwt;
    } catch (err) {
      const entry = this.#entries.get(id);
      if (entry) entry.pending = null;
      if (entry && !entry.jwt) this.#entries.delete(id);
      throw err;
    }
  }
}

/** The process-wide cache every APNs client uses unless a test brings its own. */
export const apnsTokens = new ApnsTokenCache();
