import type { Config } from '../schemas/config.ts';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';

/** What a role gets from the process that runs it. */
export interface RoleContext {
  config: Config;
  log: Logger;
  metrics: Metrics;
  /** Unique per process (engine/worker-id.ts). */
  workerId: string;
}

/** A running role; close() is idempotent and finishes in-flight work before it resolves. */
export interface RunningRole {
  readonly name: string;
  close(): Promise<void>;
}

export type RoleFactory = (ctx: RoleContext) => Promise<RunningRole>;

export const RoleNames = ['gateway', 'apply', 'fanout', 'dispatch', 'recorder', 'scheduler'] as const;
export type RoleName = (typeof RoleNames)[number];
