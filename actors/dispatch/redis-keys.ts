import type { Topology } from '../../engine/infra/redis/topology.ts';

/** A user's sends of one channel in the frequency-cap window (engine/infra/scripts/lua/takeCapSlot-1.lua); only dispatch names it. */
export function frequencySends(topology: Topology, project: string, externalId: string, channel: string): string {
  return `${topology.ofUser('fcap', project, externalId)}:${channel}`;
}
