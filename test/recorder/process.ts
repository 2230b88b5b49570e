import { EntryBudget } from '../../actors/recorder/entry-budget.ts';
import type { RecorderLimits } from '../../actors/recorder/limits.ts';
import type { QuietWatch } from '../../actors/recorder/quiet-watch.ts';
import { RecorderConsumer } from '../../actors/recorder/recorder-consumer.ts';
import { RecordRounds } from '../../actors/recorder/rounds.ts';
import type { RecorderSink } from '../../actors/recorder/sink.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import type { InProcess } from '../helpers/in-process.ts';
import { heldLease } from '../helpers/lease.ts';

/**
 * A recorder process of a test: consumers of the given partitions, under leases held for the
 * whole test, sharing one entry budget and one round per stream kind, as a process's do, and the
 * quiet watch when one is given.
 */
export function recorderProcess(
  gw: InProcess,
  name: string,
  partitions: number[],
  sink: Pick<RecorderSink, 'record'>,
  limits: Readonly<RecorderLimits>,
  log: Logger,
  budget = new EntryBudget(limits.maxBuffered),
  quiet?: QuietWatch,
): RecorderConsumer[] {
  const rounds = new RecordRounds({ redis: gw.redis, topology: gw.topology, sink, worker: name, log, limits });
  return partitions.map(
    (partition) =>
      new RecorderConsumer({
        redis: gw.redis,
        partition,
        streams: { changes: gw.topology.changes(partition), outcomes: gw.topology.outcomes(partition) },
        consumer: name,
        rounds,
        budget,
        lease: heldLease,
        ...(quiet === undefined ? {} : { quiet }),
        log,
        metrics: new Metrics(),
        limits,
      }),
  );
}
