import { createHash, timingSafeEqual } from 'node:crypto';

/** What the listener needs of the keystore (engine/state/keys/keystore.ts). */
export interface OperatorKeySource {
  liveOperatorKeyHashes(): Promise<string[]>;
}

/**
 * Checks operator keys (docs/sql.md, "Keys"). The hashes of the live operator keys are read again
 * after `cacheMs`, so a new or revoked key counts within KEY_CACHE_MS, and a wrong key costs no
 * Redis call. The presented key's hash is compared with every live one in constant time, without
 * stopping at a match.
 */
export class OperatorKeys {
  private cached: { hashes: Buffer[]; at: number } | undefined;
  private loading: Promise<Buffer[]> | undefined;

  constructor(
    private readonly source: OperatorKeySource,
    private readonly cacheMs: number,
  ) {}

  async check(key: string): Promise<boolean> {
    const presented = createHash('sha256').update(key).digest();
    let found = false;
    for (const hash of await this.live()) found = timingSafeEqual(hash, presented) || found;
    return found;
  }

  private async live(): Promise<Buffer[]> {
    if (this.cached && Date.now() - this.cached.at < this.cacheMs) return this.cached.hashes;
    this.loading ??= this.source
      .liveOperatorKeyHashes()
      .then((hex) => {
        const hashes = hex.map((h) => Buffer.from(h, 'hex')).filter((b) => b.length === 32);
        this.cached = { hashes, at: Date.now() };
        return hashes;
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }
}

/** Failed authentications one address may make at once, and how fast it earns one more. */
const FAILURE_BURST = 10;
const FAILURE_REFILL_MS = 6000;
/** Addresses remembered; past it the oldest are forgotten, so a flood of addresses costs bounded memory. */
const MAX_ADDRESSES = 10_000;

/**
 * Failed authentications per client address, as token buckets: ten at once, then one every six
 * seconds. An address out of tokens is refused before its key is looked at.
 */
export class FailureLimiter {
  /** When an address out of tokens has one again. */
  static readonly retryAfterSeconds = FAILURE_REFILL_MS / 1000;

  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  /** True when the address may try a key now. */
  allowed(address: string): boolean {
    return this.bucket(address).tokens >= 1;
  }

  /** Counts one failure of the address. */
  fail(address: string): void {
    const bucket = this.bucket(address);
    bucket.tokens = Math.max(0, bucket.tokens - 1);
    this.buckets.delete(address);
    this.buckets.set(address, bucket);
    while (this.buckets.size > MAX_ADDRESSES) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) break;
      this.buckets.delete(oldest);
    }
  }

  private bucket(address: string): { tokens: number; at: number } {
    const now = Date.now();
    const bucket = this.buckets.get(address) ?? { tokens: FAILURE_BURST, at: now };
    bucket.tokens = Math.min(FAILURE_BURST, bucket.tokens + (now - bucket.at) / FAILURE_REFILL_MS);
    bucket.at = now;
    return bucket;
  }
}
