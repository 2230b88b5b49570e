import type { QueuedOp } from './store.ts';

/**
 * What went wrong, in a form a caller can act on: `code` is the engine's error code for a refused
 * operation (`validation_failed`, `invalid_key`, …, docs/api.md#errors) or one of the SDK's own
 * (`not_initialized`, `not_logged_in`, `no_user_gesture`, `permission_denied`, `no_worker`,
 * `push_unsupported`, `invalid_argument`); `status` is the HTTP status, 0 when no answer came;
 * `op` is the refused operation, dropped from the queue.
 */
export class SvcError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
    readonly op?: QueuedOp,
  ) {
    super(message);
    this.name = 'SvcError';
  }
}
