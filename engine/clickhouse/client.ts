import { mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseClientConfigOptions,
  type ErrorLogParams,
  type LogParams,
  type Logger as ClientLogger,
  type WarnLogParams,
} from '@clickhouse/client';
import type { Config } from '../../schemas/config.ts';
import type { Logger } from '../log.ts';
import { EngineLockedError, embeddedLockHolder, statusFileHolder } from './lock-holder.ts';

export type ClickHouse = ClickHouseClient;

/** The insert-file directory of each embedded client (engine/clickhouse/insert.ts uses it). */
const inboxes = new WeakMap<ClickHouse, string>();

/**
 * The directory from which the embedded engine behind `ch` reads insert files
 * (`INSERT ... FROM INFILE`), or undefined for a server client.
 */
export function insertInbox(ch: ClickHouse): string | undefined {
  return inboxes.get(ch);
}

const require = createRequire(import.meta.url);

/** Where the client points, for messages: the server URL or the embedded data directory. */
export function clickHouseLocation(config: Pick<Config, 'CLICKHOUSE_URL' | 'DATA_DIR'>): string {
  return config.CLICKHOUSE_URL ?? `embedded ${join(config.DATA_DIR, 'clickhouse')}`;
}

/**
 * A ClickHouse server when CLICKHOUSE_URL is set, else the embedded chDB engine under
 * DATA_DIR/clickhouse, which one process at a time may open (throws EngineLockedError otherwise).
 * Inserts must go through ./insert.ts (docs/architecture.md, "ClickHouse: one client, two modes").
 */
export function createClickHouse(config: Pick<Config, 'CLICKHOUSE_URL' | 'DATA_DIR'>, logger?: Logger): ClickHouse {
  const log = clientLog(logger);
  if (config.CLICKHOUSE_URL !== undefined) return createClient({ url: config.CLICKHOUSE_URL, log });
  const path = join(config.DATA_DIR, 'clickhouse');
  mkdirSync(path, { recursive: true });
  // chdb types its connection against @clickhouse/client-common, which @clickhouse/client 1.23
  // now declares itself: the same interface declared twice, so TypeScript needs the cast (the
  // tests in test/clickhouse exercise it).
  // Loaded only here: the engine maps ~150 MB into the process, which server mode never needs.
  const { createChdbConnection } = require('chdb/connection') as typeof import('chdb/connection');
  const holder = embeddedLockHolder(path);
  if (holder) throw new EngineLockedError(path, holder);
  let chdb: ReturnType<typeof createChdbConnection>;
  try {
    chdb = createChdbConnection({ path });
  } catch (err) {
    const lockedBy = embeddedLockHolder(path) ?? statusFileHolder(path);
    throw lockedBy ? new EngineLockedError(path, lockedBy, { cause: err }) : err;
  }
  const connection = chdb as unknown as NonNullable<ClickHouseClientConfigOptions['connection']>;
  const client = createClient({ connection, log });
  // The engine reads a file about twice as fast as the same rows sent inline after the INSERT
  // (10k outcomes: 42 ms against 84 ms), so bulk inserts go through files here. Only the process
  // that opened the engine uses this directory, so files left by a crash are removed now.
  const inbox = join(config.DATA_DIR, 'clickhouse-inbox');
  rmSync(inbox, { recursive: true, force: true });
  mkdirSync(inbox, { recursive: true });
  inboxes.set(client, inbox);
  return client;
}

function clientLog(logger: Logger | undefined): NonNullable<ClickHouseClientConfigOptions['log']> {
  if (!logger) return { level: ClickHouseLogLevel.OFF };
  const sink = logger;
  const fields = ({ module, args }: LogParams, err?: Error) => ({ module, ...(args ? { args } : {}), ...(err ? { err } : {}) });
  // The client instantiates LoggerClass itself, without arguments, hence a class closing over sink.
  class Forward implements ClientLogger {
    trace(): void {}
    debug(): void {}
    info(): void {}
    warn(p: WarnLogParams): void {
      sink.warn(`clickhouse: ${p.message}`, fields(p, p.err));
    }
    error(p: ErrorLogParams): void {
      sink.error(`clickhouse: ${p.message}`, fields(p, p.err));
    }
  }
  return { LoggerClass: Forward, level: ClickHouseLogLevel.WARN };
}
