import type { IngestEntry } from '../../../schemas/ingest.ts';
import type { RedisClient } from './client.ts';
import type { Topology } from './topology.ts';

/**
 * Appends one entry to its user's partition stream and resolves with the stream ID once Redis has
 * it (docs/architecture.md#durable-accept). Commands issued in one tick share one write.
 */
export async function appendEntry(redis: RedisClient, topology: Topology, entry: IngestEntry, json = JSON.stringify(entry)): Promise<string> {
  const key = topology.ingest(topology.partitionOf(entry.project, entry.external_id));
  const id = await redis.xadd(key, '*', 'd', json);
  if (id === null) throw new Error(`XADD to ${key} returned no id`);
  return id;
}

/**
 * Appends several entries in the given order (a batch is accepted only when all are appended);
 * `lines` are their JSON texts when the caller has them already.
 */
export async function appendEntries(redis: RedisClient, topology: Topology, entries: IngestEntry[], lines?: readonly string[]): Promise<string[]> {
  return Promise.all(entries.map((entry, i) => appendEntry(redis, topology, entry, lines?.[i])));
}
