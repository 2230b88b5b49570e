import { Cluster, Redis, type ClusterOptions, type Command, type RedisOptions } from 'ioredis';
import type { Config } from '../../../schemas/config.ts';
import { loadScripts, type ScriptCommands } from '../scripts/registry.ts';

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
  /**
   * On a Cluster, whether ioredis follows redirections itself (default true); false hands every
   * `MOVED`, `ASK`, `TRYAGAIN` or `CLUSTERDOWN` to the caller and never resends a command.
   */
  followRedirections?: boolean;
}

/**
 * Commands whose key follows a subcommand (`XGROUP CREATE key`, `XINFO GROUPS key`): a single
 * node's auto-pipeline needs no key, but they are kept out of it as on a Cluster before.
 */
const autoPipeliningIgnoredCommands = ['xgroup', 'xinfo'];

/**
 * How a Cluster client follows the cluster as it changes (docs/architecture.md#cluster-redirections):
 * every command on its own, so ioredis follows each `MOVED`, `ASK`, `TRYAGAIN` and `CLUSTERDOWN`
 * reply (an auto-pipeline groups commands by a slot map that a redirection inside it does not
 * correct), at most `maxRedirections` times, pausing 100 ms on each `TRYAGAIN`, `CLUSTERDOWN` or
 * closed connection; the slot map is read again after each `MOVED` and every few seconds.
 */
const clusterOptions: ClusterOptions = {
  enableAutoPipelining: false,
  maxRedirections: 16,
  retryDelayOnMoved: 0,
  retryDelayOnTryAgain: 100,
  retryDelayOnClusterDown: 100,
  retryDelayOnFailover: 100,
  slotsRefreshInterval: 5000,
};

/**
 * Connects to REDIS_URL: one `redis://` URL is a single node, a comma-separated list is a Redis
 * Cluster. On a single node, auto-pipelining batches the commands of one event-loop tick into one
 * write. A Cluster client always has a command timeout (REDIS_CLUSTER_TIMEOUT_MS unless the caller
 * names its own), so no command waits forever on a node that went away.
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
          {
            ...clusterOptions,
            enableOfflineQueue: options.offlineQueue ?? true,
            ...(options.followRedirections === false ? { maxRedirections: 0 } : {}),
            redisOptions: { ...common, enableAutoPipelining: false, commandTimeout: options.commandTimeout ?? config.REDIS_CLUSTER_TIMEOUT_MS },
          },
        )
      : new Redis(urls[0] ?? 'redis://127.0.0.1:6379', common);
  if (client instanceof Cluster) neverResendFailed(client);
  client.on('error', () => {
    // Connection errors surface on the commands that fail; ioredis reconnects by itself.
  });
  loadScripts(client);
  return client as RedisClient;
}

/**
 * ioredis's Cluster resends a command it is following a redirection for even after the command's
 * timeout failed it; the caller has moved on by then (retried, recovered, given a partition up),
 * and the late command would land behind its successors. So a command the caller saw fail is
 * never written again (docs/architecture.md#cluster-redirections). Pipelines are left alone:
 * their commands are written together.
 */
function neverResendFailed(cluster: Cluster): void {
  const failed = new WeakSet<Command>();
  const patched = new WeakSet<Redis>();
  const send = cluster.sendCommand.bind(cluster);
  cluster.sendCommand = (command, stream, node?: unknown) => {
    command.promise.catch(() => failed.add(command));
    return send(command, stream, node);
  };
  const guard = (redis: Redis): void => {
    if (patched.has(redis)) return;
    patched.add(redis);
    const sendToNode = redis.sendCommand.bind(redis);
    redis.sendCommand = (command, stream) => (stream === undefined && failed.has(command) ? command.promise : sendToNode(command, stream));
  };
  cluster.nodes('all').forEach(guard);
  cluster.on('+node', guard);
}

