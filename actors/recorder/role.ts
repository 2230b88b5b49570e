import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleFactory } from '../../engine/infra/runner/roles.ts';
import { runPartitionRole } from '../../engine/infra/runner/partition-runner.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { EntryBudget } from './entry-budget.ts';
import { RecorderLimits } from './limits.ts';
import { QuietWatch } from './quiet-watch.ts';
import { RecorderConsumer } from './recorder-consumer.ts';
import { RecordRounds } from './rounds.ts';
import { RecorderSink } from './sink.ts';

/**
 * The `recorder` role: owns partitions through leases of its own and records their changes
 * (users, events, receipts) and outcomes (message_deliveries) into ClickHouse. close() inserts
 * what is batched, acknowledges it, releases the leases and closes the quiet watch's connection.
 */
export const recorderRole: RoleFactory = async (ctx) => {
  const { config, log, metrics, workerId } = ctx;
  const ch = await ctx.clickhouse.get();
  const redis = createRedis(config);
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const sink = new RecorderSink(ch, redis, topology, metrics, log);
  const rounds = new RecordRounds({ redis, topology, sink, worker: workerId, log });
  const budget = new EntryBudget(RecorderLimits.maxBuffered);
  const quiet = new QuietWatch({ redis, log });
  const role = runPartitionRole('recorder', ctx, redis, {
    leaseKey: (p) => topology.recorderLease(p),
    workersKey: topology.recorderWorkers(),
    work: (partition, _onLost, lease) =>
      new RecorderConsumer({
        redis,
        partition,
        streams: { changes: topology.changes(partition), outcomes: topology.outcomes(partition) },
        consumer: workerId,
        rounds,
        budget,
        lease,
        quiet,
        log,
        metrics,
      }),
  });
  return { name: role.name, close: () => role.close().finally(() => quiet.stop()) };
};
