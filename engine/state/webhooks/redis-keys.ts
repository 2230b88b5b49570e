import type { Topology } from '../../infra/redis/topology.ts';

/** The keys of webhook endpoints: records, queues, their senders' leases and the indexes. Only engine/state/webhooks/ imports it. */
export class WebhookKeys {
  constructor(private readonly topology: Topology) {}

  /** A webhook endpoint's record (hash: config and health); its keys share the tag `{w<id>}`. */
  webhook(id: string): string {
    return `${this.topology.prefix}webhook:{w:${id}}`;
  }

  /** A webhook endpoint's queue of events to deliver (stream), oldest first. */
  webhookQueue(id: string): string {
    return `${this.topology.prefix}whq:{w:${id}}`;
  }

  /** Which webhooks process sends to an endpoint (lease). */
  webhookLease(id: string): string {
    return `${this.topology.prefix}whlease:{w:${id}}`;
  }

  /** Every webhook endpoint's id (set); per project, projectWebhooks. */
  webhooks(): string {
    return `${this.topology.prefix}webhooks`;
  }

  projectWebhooks(project: string): string {
    return `${this.topology.prefix}project:${project}:webhooks`;
  }

  /** Bumped on every endpoint created, deleted or disabled: readers reload their copy. */
  webhooksVersion(): string {
    return `${this.topology.prefix}webhooks:version`;
  }
}
