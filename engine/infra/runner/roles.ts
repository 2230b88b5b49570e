import type { Config } from '../../../schemas/config.ts';
import type { ClickHouseStore } from '../clickhouse/store.ts';
import type { Logger } from '../process/log.ts';
import type { Metrics } from '../process/metrics.ts';

/** What a role gets from the process that runs it. */
export interface RoleContext {
  config: Config;
  log: Logger;
  metrics: Metrics;
  /** Unique per process (engine/infra/process/worker-id.ts). */
  workerId: string;
  /** The process's one ClickHouse client, opened and migrated on first use. */
  clickhouse: ClickHouseStore;
}

/** A running role; close() is idempotent and finishes in-flight work before it resolves. */
export interface RunningRole {
  readonly name: string;
  close(): Promise<void>;
}

export type RoleFactory = (ctx: RoleContext) => Promise<RunningRole>;

export const RoleNames = ['gateway', 'apply', 'fanout', 'dispatch', 'recorder', 'scheduler', 'webhooks', 'sql'] as const;
export type RoleName = (typeof RoleNames)[number];

/** Roles that use ClickHouse; `engine start` opens and migrates it before starting them. */
// Fan-out opens it on its first segment or filter audience: one targeting users by id needs none.
// The SQL listener on the embedded engine must live in the process that holds it (docs/sql.md).
export const ClickHouseRoles: readonly RoleName[] = ['recorder', 'sql'];
