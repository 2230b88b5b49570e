import { insertWebhookAttempts } from '../../engine/infra/clickhouse/webhook-attempts.ts';
import { Notifications } from '../../engine/state/notifications/lifecycle.ts';
import { outboundPolicy } from '../../engine/infra/outbound/guard.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleFactory } from '../../engine/infra/runner/roles.ts';
import { runPartitionRole } from '../../engine/infra/runner/partition-runner.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';
import { AttemptLog } from './attempt-log.ts';
import { backoffOf } from './backoff.ts';
import { EndpointCopy } from './endpoints.ts';
import { WebhookHttp } from './http.ts';
import { SenderPool } from './senders.ts';
import { EventTap } from './tap.ts';
import { NotificationWatcher } from './watcher.ts';

/**
 * The `webhooks` role (docs/api.md#webhooks): taps the partitions' outcome and change streams for
 * events and queues them per endpoint, watches notifications for their end, and delivers each
 * endpoint's queue from the one process that holds its lease. Receivers are only ever waited
 * for by their own sender: a slow or dead one delays nothing else.
 */
export const webhooksRole: RoleFactory = async (ctx) => {
  const { config, log, metrics, workerId } = ctx;
  const redis = createRedis(config);
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const registry = new WebhookRegistry(redis, topology);
  const endpoints = new EndpointCopy(registry);
  const http = new WebhookHttp(outboundPolicy(config), config.WEBHOOK_TIMEOUT_MS, config.WEBHOOK_CONCURRENCY);
  const attempts = new AttemptLog(async (rows) => insertWebhookAttempts(await ctx.clickhouse.get(), rows), metrics, log);
  const senders = new SenderPool(redis, workerId, config.LEASE_MS, {
    registry,
    http,
    policy: outboundPolicy(config),
    attempts,
    backoff: backoffOf(config),
    concurrency: config.WEBHOOK_CONCURRENCY,
    queueMax: config.WEBHOOK_QUEUE_MAX,
    log,
  }, log);
  const watcher = new NotificationWatcher({
    redis,
    topology,
    notifications: new Notifications(redis, topology),
    endpoints,
    registry,
    worker: workerId,
    leaseMs: config.LEASE_MS,
    log,
  });
  attempts.start();
  senders.start();
  watcher.start();
  const taps = runPartitionRole('webhooks', ctx, redis, {
    leaseKey: (p) => topology.webhooksLease(p),
    workersKey: topology.webhooksWorkers(),
    work: (partition) =>
      new EventTap({
        redis,
        registry,
        endpoints,
        partition,
        streams: { outcomes: topology.outcomes(partition), changes: topology.changes(partition) },
        consumer: workerId,
        log,
        metrics,
      }),
  });
  let closing: Promise<void> | undefined;
  return {
    name: 'webhooks',
    close: () =>
      (closing ??= (async () => {
        await watcher.close();
        await senders.close();
        await attempts.close();
        await http.close();
        await taps.close();
      })()),
  };
};
