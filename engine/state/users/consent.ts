import type { UserChange } from '../../../schemas/changes.ts';
import type { SubscriptionType } from '../../../schemas/sdk.ts';
import type { StoredConsent } from '../../../schemas/state.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { UserKeys } from './redis-keys.ts';

/**
 * Writes one user's consent for a subscription type, with a `user` change for the ClickHouse
 * mirror in the same script call, which runs at maxmemory too. Never through the ingest log, so it holds for users not known
 * yet (docs/architecture.md, "Consent writes").
 */
export async function writeConsent(
  redis: RedisClient,
  topology: Topology,
  project: string,
  externalId: string,
  type: SubscriptionType,
  optedOut: boolean,
  at: number,
): Promise<StoredConsent> {
  const stored: StoredConsent = { opted_out: optedOut, at };
  const change: UserChange = { kind: 'user', project, external_id: externalId, consent: { type, opted_out: optedOut, at } };
  await scripts.writeConsent(redis, {
    keys: { user: topology.own(UserKeys).user(project, externalId), changes: topology.changes(topology.partitionOf(project, externalId)) },
    args: { type, optedOut: optedOut ? '1' : '0', at, change: JSON.stringify(change) },
  });
  return stored;
}

/** Parses the fields of a consent hash (as returned by HGETALL). */
export function parseConsent(hash: Record<string, string>): Partial<Record<SubscriptionType, StoredConsent>> {
  const out: Partial<Record<SubscriptionType, StoredConsent>> = {};
  for (const [type, json] of Object.entries(hash)) {
    const value = parseJson(json);
    if (isConsent(value)) out[type as SubscriptionType] = { opted_out: value.opted_out, at: value.at };
  }
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function isConsent(value: unknown): value is StoredConsent {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v['opted_out'] === 'boolean' && typeof v['at'] === 'number';
}
