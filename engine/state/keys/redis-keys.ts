import type { Topology } from '../../infra/redis/topology.ts';

/** The keys of projects, their app keys, the operator keys and the providers' credentials. Only engine/state/keys/ imports it. */
export class ProjectKeys {
  constructor(private readonly topology: Topology) {}

  project(id: string): string {
    return `${this.topology.prefix}project:${id}`;
  }

  projectKeys(id: string): string {
    return `${this.topology.prefix}project:${id}:keys`;
  }

  providers(id: string): string {
    return `${this.topology.prefix}project:${id}:providers`;
  }

  projects(): string {
    return `${this.topology.prefix}projects`;
  }

  key(hash: string): string {
    return `${this.topology.prefix}key:${hash}`;
  }

  /** The hashes of the operator keys (set); each key's record is at key(hash). */
  operatorKeys(): string {
    return `${this.topology.prefix}operator:keys`;
  }
}
