import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../schemas/config.ts';
import { loadScripts, type ScriptCommands } from './scripts.ts';

/**
 * Stream reads whose reply keeps every value as bytes. ioredis defines a `<command>Buffer`
 * variant of each command at run time but declares few of them; these are the ones used here
 * (the recorder, which hands outcome values to ClickHouse undecoded).
 */
export interface BufferReplies {
  xreadgroupBuffer(...args: (string | number)[]): Promise<unknown>;
  xautoclaimBuffer(...args: (string | number)[]): Promise<unknown>;
}

/** A Redis or Redis Cluster client with this project's Lua commands defined on it. */
export type RedisClient = (Redis | Cluster) & ScriptCommands & BufferReplies;

export interface RedisClientOptions {
  /** Fail a command that has not been answered within this many ms (never for blocking reads). */
  commandTimeout?: number;
  /** Queue commands while disconnected (default true); false makes them fail at once. */
  offlineQueue?: boolean;
}

/**
 * Commands whose key follows a subcommand (`XGROUP CREATE key`, `XINFO GROUPS key`): on a Redis
 * Cluster an auto-pipeline can group them under the wrong node, and a MOVED reply inside a
 * pipeline is not followed, so they are sent on their own.
 */
const autoPipeliningIgnoredCommands = ['xgroup', 'xinfo'];

/**
 * Connects to REDIS_URL: one `redis://` URL is a single node, a comma-separated list is a Redis
 * Cluster. Auto-pipelining batches the commands of one event-loop tick into one write.
 */
export function createRedis(config: Config, options: RedisClientOptions = {}): RedisClient {
  const urls = config.REDIS_URL.split(',').map((u) => u.trim()).filter(Boolean);
  const common: RedisOptions = {
    enableAutoPipelining: true,
    autoPipeliningIgnoredCommands,
    maxRetriesPerRequest: options.commandTimeout === undefined ? null : 1,
    enableOfflineQueue: options.offlineQueue ?? true,
    lazyConnect: false,
    ...(options.commandTimeout === undefined ? {} : { commandTimeout: options.commandTimeout }),
  };
  const client =
    urls.length > 1
      ? new Cluster(
          urls.map((u) => {
            const url = new URL(u);
            return { host: url.hostname, port: Number(url.port || 6379) };
          }),
          { enableAutoPipelining: true, autoPipeliningIgnoredCommands, redisOptions: common },
        )
      : new Redis(urls[0] ?? 'redis://127.0.0.1:6379', common);
  client.on('error', () => {
    // Connection errors surface on the commands that fail; ioredis reconnects by itself.
  });
  loadScripts(client);
  return client as RedisClient;
}
