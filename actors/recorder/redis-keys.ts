import type { Topology } from '../../engine/infra/redis/topology.ts';

/** The recorder's keys of its rounds (actors/recorder/rounds.ts); only the recorder names them. */
export class RecorderKeys {
  constructor(private readonly topology: Topology) {}

  /** Per stream kind of partition N, the recorder round (token) its batch in flight went into. */
  marks(partition: number): string {
    return this.topology.named(`recorder:marks:${this.topology.tag(partition)}`);
  }

  /** A recorder round's manifest: the batches one insert carries. */
  round(token: string): string {
    return this.topology.named(`recorder:round:${token}`);
  }
}
