import { randomUUID } from 'node:crypto';
import type { Logger } from '../../engine/infra/process/log.ts';
import { classify } from '../../engine/infra/process/failure.ts';
import { ErrorCodes, type ErrorCode, type ErrorItem } from '../../schemas/errors.ts';

/**
 * The one catch boundary of the gateway: whatever a handler throws is classified once (engine/infra/process/failure.ts) as
 * the caller's error (4xx), unavailability (503 with Retry-After: a dependency unreachable or too
 * slow, and nothing else) or a bug (500 `internal`, its error_id on the log line with the stack).
 * What counts as unavailable is listed in docs/architecture.md, "Errors by kind".
 */

/** How to answer a failure: the code, its items (the registry's default item when absent), Retry-After seconds. */
export interface Outcome {
  code: ErrorCode;
  items?: ErrorItem[];
  retryAfter?: number;
}

/** Most one unavailability warning a second, so an outage does not flood the log. */
const WARN_EVERY_MS = 1000;

/** Classifies, logs by kind and says how to answer; one per gateway (GatewayDeps.failures). */
export class Failures {
  private lastWarn = 0;

  constructor(private readonly log: Logger) {}

  /**
   * What `what` (a route, a frame, a lookup) failed with, as an answer. A caller error is not
   * logged; unavailability is a rate-limited warning; a bug is an error line with the stack and a
   * fresh error_id, which the answer carries.
   */
  outcome(what: string, err: unknown): Outcome {
    const failure = classify(err);
    switch (failure.kind) {
      case 'caller':
        return failure.error.items === undefined ? { code: failure.error.code } : { code: failure.error.code, items: failure.error.items };
      case 'overloaded':
        this.warn(what, err);
        return { code: 'overloaded', items: [{ code: 'overloaded', message: failure.error.message }], retryAfter: failure.error.retryAfter };
      case 'unavailable':
        this.warn(what, err);
        return { code: 'unavailable', retryAfter: failure.retryAfter };
      case 'bug': {
        const errorId = randomUUID();
        this.log.error(`${what} failed`, { error_id: errorId, err: err instanceof Error ? err : new Error(`non-error thrown: ${String(err)}`) });
        return { code: 'internal', items: [{ code: 'internal', message: ErrorCodes.internal.message, error_id: errorId }] };
      }
    }
  }

  /** Logs a failure nobody is waiting for an answer to, by its kind. */
  report(what: string, err: unknown): void {
    this.outcome(what, err);
  }

  private warn(what: string, err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarn < WARN_EVERY_MS) return;
    this.lastWarn = now;
    this.log.warn(`${what} failed`, { err: err instanceof Error ? err.message : String(err) });
  }
}
