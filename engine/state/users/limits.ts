/** Limits of a user's state, enforced when an apply writes it (docs/api.md#limits). */
export const ApplyLimits = {
  /** Tags per user; new keys past it are ignored, existing ones still update. */
  maxTags: 200,
  /** Subscriptions per user; past it the oldest by registration is dropped. */
  maxSubscriptions: 20,
  /** How long a gateway writer's last applied sequence is kept: copies the engine made itself (a lost reply, a replay). */
  idempotencyMs: 8 * 24 * 60 * 60 * 1000,
  /** A copy of an event with an idempotency key within this long of the original is dropped (docs/api.md). */
  idempotencyWindowMs: 7 * 24 * 60 * 60 * 1000,
} as const;
