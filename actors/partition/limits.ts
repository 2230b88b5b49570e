/** Limits the partition actor enforces when it applies (docs/api.md#limits). */
export const ApplyLimits = {
  /** Tags per user; new keys past it are ignored, existing ones still update. */
  maxTags: 200,
  /** Subscriptions per user; past it the oldest by registration is dropped. */
  maxSubscriptions: 20,
  /** Lifetime of an event idempotency key: the promise is 7 days, one more for clock slack. */
  idempotencyMs: 8 * 24 * 60 * 60 * 1000,
} as const;
