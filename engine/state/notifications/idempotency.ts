import { createHash } from 'node:crypto';
import { CallerError, UnavailableError } from '../../../schemas/errors.ts';
import { NotificationLimits, type NotificationCreated, type NotificationSpec } from '../../../schemas/notifications.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { NotificationKeys } from './redis-keys.ts';
import { Notifications } from './lifecycle.ts';

/**
 * idempotency_key of POST /api/notifications (docs/api.md#reading-listing-and-cancelling): the first request claims the key
 * with SET NX (so of two concurrent first requests exactly one creates), storing its answer and
 * spec; a repeat with the same body gets that answer, another body 409.
 *
 * The claim is made before the record is written (a claim after it could let two requests both
 * create), so a crash between the two leaves a claim whose notification was never written. A
 * repeat then writes it itself, from the claim, once the claim is old enough that its first
 * request cannot still be writing (REPAIR_AFTER_MS); `written` marks claims known to be done.
 */

/** Longer than any Redis command may take (REDIS_TIMEOUT_MS): the first request is gone by then. */
const REPAIR_AFTER_MS = 30_000;
/** How long a repeat waits for a concurrent first request to write its notification. */
const WAIT_MS = 2_000;

export interface Claim {
  id: string;
  /** bodyHash of the first request. */
  hash: string;
  answer: NotificationCreated;
  spec: NotificationSpec;
  /** Claim time, ms. */
  at: number;
  /** The record and log entry are written. */
  written?: true;
}

/** A claim as stored: answers stored before 0.8.0 lack the OneSignal-shaped fields. */
interface StoredClaim extends Omit<Claim, 'answer'> {
  answer: Omit<NotificationCreated, 'external_id' | 'warnings'> & Partial<Pick<NotificationCreated, 'external_id' | 'warnings'>>;
}

/** sha256 of the body as received, its keys sorted at every level. */
export function bodyHash(body: unknown): string {
  return createHash('sha256').update(canonical(body)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export class IdempotencyKeys {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  /**
   * The answer to a request with `key` and body hash `hash` when the key was used before (repeat);
   * null for its first request, which goes on to create the notification.
   */
  async answered(project: string, key: string, hash: string): Promise<NotificationCreated | null> {
    const prior = await this.read(project, key);
    return prior === null ? null : this.repeat(project, key, prior, hash);
  }

  /**
   * Writes the notification of `claim` and answers its answer. With a key, the key is claimed first
   * (of two concurrent first requests exactly one writes; the other answers as the winner's
   * repeat), and marked written after. Without one, the record is written alone.
   */
  async acceptOnce(project: string, key: string | undefined, claim: Claim): Promise<NotificationCreated> {
    const notifications = new Notifications(this.redis, this.topology);
    if (key === undefined) {
      await notifications.accept(claim.spec, claim.answer.recipients, claim.at);
      return claim.answer;
    }
    const claimed = await this.claim(project, key, claim);
    if (claimed === null) {
      // A concurrent first request with this key won the claim: answer as its repeat.
      const winner = await this.read(project, key);
      if (winner === null) throw new Error('idempotency claim lost, then not found');
      return this.repeat(project, key, winner, claim.hash);
    }
    await notifications.accept(claim.spec, claim.answer.recipients, claim.at);
    await this.written(project, key, claimed);
    return claim.answer;
  }

  async read(project: string, key: string): Promise<Claim | null> {
    const json = await this.redis.get(this.topology.own(NotificationKeys).notificationIdempotency(project, key));
    if (json === null) return null;
    const claim = JSON.parse(json) as StoredClaim;
    const { answer } = claim;
    return { ...claim, answer: { ...answer, external_id: answer.external_id ?? null, warnings: answer.warnings ?? [] } };
  }

  /** Claims the key for `claim`; null when taken, else the claim. */
  async claim(project: string, key: string, claim: Claim): Promise<Claim | null> {
    const set = await this.redis.set(this.topology.own(NotificationKeys).notificationIdempotency(project, key), JSON.stringify(claim), 'EX', NotificationLimits.idempotencySeconds, 'NX');
    return set === null ? null : claim;
  }

  /** Marks a claim whose notification is written, keeping its expiry. */
  async written(project: string, key: string, claim: Claim): Promise<void> {
    await this.redis.set(this.topology.own(NotificationKeys).notificationIdempotency(project, key), JSON.stringify({ ...claim, written: true }), 'KEEPTTL', 'XX');
  }

  /**
   * The answer to a repeat of `prior`'s request with body hash `hash`: 409 for another body; the
   * stored answer once its notification is written (waiting a little for a concurrent first
   * request, repairing the write of a first request that crashed); 503 while the first request may
   * still be writing.
   */
  async repeat(project: string, key: string, prior: Claim, hash: string, now = Date.now): Promise<NotificationCreated> {
    if (prior.hash !== hash) {
      throw new CallerError('idempotency_conflict', [
        { code: 'idempotency_conflict', message: 'idempotency_key: used before with a different body', path: '/idempotency_key' },
      ]);
    }
    if (prior.written) return prior.answer;
    const notifications = new Notifications(this.redis, this.topology);
    for (const deadline = now() + WAIT_MS; ; ) {
      if (await notifications.exists(prior.id)) return prior.answer;
      if (now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (now() - prior.at < REPAIR_AFTER_MS) throw new UnavailableError('a request with this idempotency_key is still being processed', 1);
    await notifications.accept(prior.spec, prior.answer.recipients, now());
    await this.written(project, key, prior);
    return prior.answer;
  }
}
