import { hashKey, type FrequencyCaps, type Keystore, type KeyType, type RateLimit } from '../../engine/state/keys/keystore.ts';

/** Who a request comes from: a live key of a project, with what identity verification needs. */
export interface Caller {
  project: string;
  type: KeyType;
  /** The project's identity-verification switch (docs/api.md#keys-and-projects). */
  verifyIdentity: boolean;
  identitySecret: string;
  /** SHA-256 of the key: names its rate-limit bucket. */
  keyHash: string;
  /** The project's per-key rate limit (docs/api.md#rate-limits-429-and-retry-after); null when off, and then no Redis call is made. */
  rateLimit: RateLimit | null;
  /** The project's default time zone (docs/api.md#local-time). */
  timezone: string;
  /** The project's frequency caps by channel (docs/api.md#frequency-caps). */
  frequencyCaps: FrequencyCaps;
  /** The web SDK's worker reports shown pushes as delivered (sdk/web/README.md). */
  webDeliveredReceipts: boolean;
}

interface Entry {
  /** null: unknown or revoked key (misses are cached too, so a flood of bad keys stays cheap). */
  caller: Caller | null;
  expires: number;
}

/** Most cached keys; past it the cache is emptied rather than grown (a flood of random keys). */
const MAX_ENTRIES = 10_000;

/**
 * Key and project lookups behind a cache of KEY_CACHE_MS (a revocation is seen within it);
 * concurrent lookups of a key share one round trip. While Redis cannot answer, the last answer
 * stands: a revocation is itself a Redis write, so none can have happened since.
 */
export class CallerCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Caller | null>>();

  constructor(
    private readonly keystore: Keystore,
    private readonly ttlMs: number,
  ) {}

  /** The cached answer: a caller, null for a bad key, undefined when it must be loaded. */
  peek(key: string): Caller | null | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    return entry.expires > Date.now() ? entry.caller : undefined;
  }

  /**
   * Looks the key up in Redis; when Redis fails, answers with the expired entry if there is one,
   * else rejects (failures are not cached).
   */
  load(key: string): Promise<Caller | null> {
    const pending = this.loading.get(key);
    if (pending) return pending;
    const promise = this.fetch(key)
      .catch((err: unknown) => {
        const stale = this.entries.get(key);
        if (stale === undefined) throw err;
        // It stands for another KEY_CACHE_MS: else every request would wait out a lookup that
        // fails the same way, for as long as the outage lasts.
        stale.expires = Date.now() + this.ttlMs;
        return stale.caller;
      })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, promise);
    return promise;
  }

  private async fetch(key: string): Promise<Caller | null> {
    const owner = await this.keystore.lookupKey(key);
    const project = owner ? await this.keystore.getProject(owner.project_id) : null;
    const caller: Caller | null =
      owner && project
        ? {
            project: project.id,
            type: owner.type,
            verifyIdentity: project.identity_verification,
            identitySecret: project.identity_secret,
            keyHash: hashKey(key),
            rateLimit: project.rate_limit,
            timezone: project.timezone,
            frequencyCaps: project.frequency_caps,
            webDeliveredReceipts: project.web_delivered_receipts,
          }
        : null;
    if (this.ttlMs > 0) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, { caller, expires: Date.now() + this.ttlMs });
    }
    return caller;
  }
}

/**
 * The schemes a key may come with: `Bearer`, and `Key` and `Basic` as OneSignal's clients send it
 * (docs/api.md#keys-and-projects); any case.
 */
const SCHEMES = ['bearer ', 'key ', 'basic '];

/** The key of `Authorization: <scheme> <key>`, or null when the header is missing or malformed. */
export function authorizationKey(header: string): string | null {
  const lower = header.slice(0, 7).toLowerCase();
  const scheme = SCHEMES.find((s) => lower.startsWith(s));
  return scheme === undefined ? null : keyToken(header.slice(scheme.length).trim());
}

/** A key as sent, or null when it cannot be one (empty, over 512 characters, or with a space). */
export function keyToken(text: string): string | null {
  return text.length > 0 && text.length <= 512 && !text.includes(' ') ? text : null;
}
