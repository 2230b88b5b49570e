import type { RedisClient } from '../engine/infra/redis/client.ts';
import type { Topology } from '../engine/infra/redis/topology.ts';
import type { OutcomeEntry } from '../schemas/outcomes.ts';

/**
 * Appends delivery outcomes 0 .. count-1 to the outcomes streams, each to its user's partition as
 * dispatch does, 5 000 to a pipeline: the backlog the recorder and webhooks benchmarks drain.
 */
export async function appendOutcomes(redis: RedisClient, topology: Topology, count: number, outcome: (n: number) => OutcomeEntry): Promise<void> {
  for (let n = 0; n < count; n += 5000) {
    const pipeline = redis.pipeline();
    for (let i = n; i < Math.min(count, n + 5000); i++) {
      const o = outcome(i);
      pipeline.xadd(topology.outcomes(topology.partitionOf(o.project, o.external_id)), '*', 'd', JSON.stringify(o));
    }
    await pipeline.exec();
  }
}
