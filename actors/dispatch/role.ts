import { readFileSync } from 'node:fs';
import { Notifications, USERS_PER_JOB } from '../../engine/state/notifications/lifecycle.ts';
import { outboundPolicy } from '../../engine/infra/outbound/guard.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleFactory } from '../../engine/infra/runner/roles.ts';
import { runPartitionRole, type PartitionWork } from '../../engine/infra/runner/partition-runner.ts';
import { DISPATCH_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
import { ProjectClients } from './clients.ts';
import { DispatchConsumer } from './dispatch-consumer.ts';
import { DispatchHandler } from './dispatch-handler.ts';
import { apnsTokens } from './providers/apns-token.ts';
import { Specs } from './specs.ts';
import { RetryClock } from './retry-clock.ts';
import { RedisTokenStore } from './token-store.ts';

/**
 * Most users whose jobs run at once per owned partition: the in-flight window a crash may repeat.
 * With the 64 partitions of a default deployment that is 2 048 users, twice the APNs sends a
 * process keeps in flight; at 128 the jobs waiting for a send slot held 140 MB more
 * (docs/performance.md). At least four fan-out jobs' users (USERS_PER_JOB), so that a quarter of
 * it free takes a whole job.
 */
export const WINDOW = 32;
const BLOCK_MS = 2000;

/**
 * The `dispatch` role: owns partitions through leases of its own (`lease:dispatch:{pN}`) and runs
 * their dispatch jobs (actors/dispatch/dispatch-handler.ts), with the provider clients of every
 * project shared by the process. close() finishes the jobs in flight, then closes the clients.
 */
export const dispatchRole: RoleFactory = async (ctx) => {
  const { config, log, metrics, workerId } = ctx;
  const redis = createRedis(config);
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  apnsTokens.share(new RedisTokenStore(redis, topology));
  const ca = config.PROVIDER_CA_FILE === undefined ? undefined : readFileSync(config.PROVIDER_CA_FILE);
  const clients = new ProjectClients(redis, topology, { timeoutMs: config.PROVIDER_TIMEOUT_MS, outbound: outboundPolicy(config), ...(ca === undefined ? {} : { ca }) });
  const notifications = new Notifications(redis, topology);
  const retries = new RetryClock(redis, topology, log, WINDOW);
  const handler = new DispatchHandler({ redis, topology, notifications, specs: new Specs(notifications), clients, retries, log });
  const role = runPartitionRole('dispatch', ctx, redis, {
    leaseKey: (p) => topology.dispatchLease(p),
    workersKey: topology.dispatchWorkers(),
    work: (partition): PartitionWork => {
      const consumer = new DispatchConsumer({
        redis,
        stream: topology.dispatch(partition),
        group: DISPATCH_GROUP,
        consumer: workerId,
        window: WINDOW,
        usersPerJob: USERS_PER_JOB,
        blockMs: BLOCK_MS,
        open: (entry) => handler.open(partition, entry),
        log,
        metrics,
      });
      return {
        start: () => {
          consumer.start();
          retries.own(partition);
        },
        stop: () => {
          retries.disown(partition);
          return consumer.stop();
        },
      };
    },
  });
  retries.start();
  return {
    name: 'dispatch',
    close: async () => {
      retries.stop();
      await role.close();
      await clients.close();
    },
  };
};
