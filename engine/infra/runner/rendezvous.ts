import { createHash } from 'node:crypto';

/**
 * Rendezvous (highest-random-weight) assignment of partitions to workers: each partition goes to
 * the live worker with the highest hash of (worker, partition). Workers that see the same live set
 * agree without talking, and a worker joining or leaving moves only its own share.
 */
export class Rendezvous {
  private readonly weights = new Map<string, number[]>();

  constructor(private readonly partitions: number) {}

  /** Partitions `self` should own among `workers` (self is always counted as live). */
  assigned(workers: readonly string[], self: string): Set<number> {
    const live = [...new Set([...workers, self])];
    for (const known of this.weights.keys()) if (!live.includes(known)) this.weights.delete(known);
    const tables = live.map((w) => ({ worker: w, weights: this.weightsOf(w) }));
    const mine = new Set<number>();
    for (let p = 0; p < this.partitions; p++) {
      let best = '';
      let bestWeight = -1;
      for (const { worker, weights } of tables) {
        const weight = weights[p] ?? 0;
        if (weight > bestWeight || (weight === bestWeight && worker > best)) {
          best = worker;
          bestWeight = weight;
        }
      }
      if (best === self) mine.add(p);
    }
    return mine;
  }

  private weightsOf(worker: string): number[] {
    let weights = this.weights.get(worker);
    if (!weights) {
      weights = [];
      for (let p = 0; p < this.partitions; p++) {
        weights.push(createHash('sha256').update(`${worker}\0${p}`).digest().readUIntBE(0, 6));
      }
      this.weights.set(worker, weights);
    }
    return weights;
  }
}
