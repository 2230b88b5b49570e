import { mkdirSync, rmSync } from 'node:fs';
import { Agent as HttpAgent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
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
import type { Config } from '../../../schemas/config.ts';
import type { Logger } from '../process/log.ts';
import { HostStartError, startHost, type ClickHouseHost } from './host/spawn.ts';
import { EngineLockedError, embeddedLockHolder } from './lock-holder.ts';

export type ClickHouse = ClickHouseClient;

/** The insert-file directory of each embedded client (engine/infra/clickhouse/insert.ts uses it). */
const inboxes = new WeakMap<ClickHouse, string>();

/**
 * The directory from which the embedded engine behind `ch` reads insert files
 * (`INSERT ... FROM INFILE`), or undefined for a server client.
 */
export function insertInbox(ch: ClickHouse): string | undefined {
  return inboxes.get(ch);
}

/** Where the client points, for messages: the server URL or the embedded data directory. */
export function clickHouseLocation(config: Pick<Config, 'CLICKHOUSE_URL' | 'DATA_DIR'>): string {
  return config.CLICKHOUSE_URL ?? `embedded ${join(config.DATA_DIR, 'clickhouse')}`;
}

/** Where the engine's own ClickHouse host answers (./host/spawn.ts), for the SQL listener. */
export interface HostEndpoint {
  socketPath: string;
  password: string;
  pid: number;
  /** Settles when the host process has ended. */
  exited: Promise<number | null>;
}

const hosts = new WeakMap<ClickHouse, HostEndpoint>();

/** The host behind an embedded client; undefined for a server client. */
export function hostEndpoint(ch: ClickHouse): HostEndpoint | undefined {
  return hosts.get(ch);
}

/**
 * A ClickHouse server when CLICKHOUSE_URL is set, else the embedded chDB engine under
 * DATA_DIR/clickhouse, run in a process of its own (./host/spawn.ts) that one engine process at a
 * time may start (throws EngineLockedError otherwise). Closing the client stops that process.
 * Inserts must go through ./insert.ts (docs/architecture.md, "ClickHouse: one client, two modes").
 */
export async function openClickHouse(config: Pick<Config, 'CLICKHOUSE_URL' | 'CLICKHOUSE_SANDBOX' | 'DATA_DIR'>, logger?: Logger): Promise<ClickHouse> {
  const log = clientLog(logger);
  if (config.CLICKHOUSE_URL !== undefined) return createClient({ url: config.CLICKHOUSE_URL, log });
  // Absolute: the host runs in a folder of its own (or the sandbox's /tmp), and reads insert files
  // by the names this process gives them; DATA_DIR is relative by default (./.data).
  const dataDir = resolve(config.DATA_DIR);
  const path = join(dataDir, 'clickhouse');
  mkdirSync(path, { recursive: true });
  const holder = embeddedLockHolder(path);
  if (holder) throw new EngineLockedError(path, holder);
  // The engine reads a file about twice as fast as the same rows sent inline after the INSERT
  // (10k outcomes: 42 ms against 84 ms), so bulk inserts go through files here. Only the process
  // that opened the engine uses this directory, so files left by a crash are removed now.
  const inbox = join(dataDir, 'clickhouse-inbox');
  rmSync(inbox, { recursive: true, force: true });
  mkdirSync(inbox, { recursive: true });
  let host: ClickHouseHost;
  try {
    host = await startHost({ dataPath: path, inbox, workPath: join(dataDir, 'clickhouse-host'), sandbox: config.CLICKHOUSE_SANDBOX, ...(logger ? { log: logger } : {}) });
  } catch (err) {
    // Not the PID in <path>/status: the host writes the one of its own PID namespace.
    if (err instanceof HostStartError && /Cannot lock file/.test(err.stderr)) throw new EngineLockedError(path, embeddedLockHolder(path), { cause: err });
    throw err;
  }
  const socketPath = host.socketPath;
  // The host answers on its Unix socket: every connection of the client goes there.
  class HostAgent extends HttpAgent {
    override createConnection(): Socket {
      return connect(socketPath);
    }
  }
  const client = createClient({ url: 'http://clickhouse-host', password: host.password, http_agent: new HostAgent({ keepAlive: true }), log });
  const closeClient = client.close.bind(client);
  client.close = async () => {
    await closeClient();
    await host.stop();
  };
  inboxes.set(client, inbox);
  hosts.set(client, { socketPath, password: host.password, pid: host.pid, exited: host.exited });
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
