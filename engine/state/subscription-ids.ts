import { hash } from 'node:crypto';
import { SubscriptionTypes, type SubscriptionType } from '../../schemas/sdk.ts';
import type { RedisClient } from '../redis.ts';
import { scripts } from '../scripts.ts';
import type { Topology } from '../topology.ts';

/** A subscription as its owner's subs hash names it. */
export interface SubscriptionRef {
  type: SubscriptionType;
  token: string;
}

/**
 * The id of a subscription (docs/api.md#users-and-events): SHA-256 of the project, type and token,
 * shaped as a UUID (version 8, RFC 9562's custom layout), so one (type, token) has the same id
 * whoever owns it and however often it is registered.
 */
export function subscriptionId(project: string, type: SubscriptionType, token: string): string {
  const hex = hash('sha256', `${project}\0${type}\0${token}`, 'hex');
  const variant = ((parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The field of a subscription in its owner's subs hash. */
export function fieldOf(ref: SubscriptionRef): string {
  return `${ref.type}:${ref.token}`;
}

/**
 * The index from subscription id to subscription (key `subid`, docs/architecture.md#redis-keys):
 * this module alone reads and writes it. An entry is written when a registration's token claim is
 * settled, so a subscription registered before the index existed is found from its next
 * registration on.
 */
export class SubscriptionIds {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  /** Records the id of a registered subscription; writing it again changes nothing. */
  async record(project: string, ref: SubscriptionRef): Promise<void> {
    await scripts.indexSubscription(this.redis, {
      keys: { index: this.topology.subscriptionId(project, subscriptionId(project, ref.type, ref.token)) },
      args: { field: fieldOf(ref) },
    });
  }

  /** The subscription of each id, or null for an id the index does not hold (one auto-pipelined round). */
  async resolve(project: string, ids: readonly string[]): Promise<(SubscriptionRef | null)[]> {
    const fields = await Promise.all(ids.map((id) => this.redis.get(this.topology.subscriptionId(project, id))));
    return fields.map((field) => (field === null ? null : parseField(field)));
  }
}

function parseField(field: string): SubscriptionRef | null {
  const colon = field.indexOf(':');
  const type = field.slice(0, colon);
  return colon > 0 && SubscriptionTypes.includes(type as SubscriptionType) ? { type: type as SubscriptionType, token: field.slice(colon + 1) } : null;
}
