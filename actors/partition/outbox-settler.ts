import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { SubscriptionTypes, type SubscriptionType } from '../../schemas/sdk.ts';
import type { OwedDetach } from '../../engine/infra/scripts/token-claims.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { legacyLayoutUntil } from '../../engine/state/users/layout.ts';
import type { ApplyEntry } from '../../engine/infra/scripts/apply-batch.ts';
import { fieldOf, toEntries } from '../../engine/infra/runner/types.ts';

/** One registration the apply script left in outbox:{pN} (field d, JSON). */
interface Registration {
  project: string;
  external_id: string;
  type: SubscriptionType;
  token: string;
  registered_at: number;
}

const READ_COUNT = 256;

/**
 * Settles the subscription registrations an apply left in a partition's outbox. A token's owner
 * lives in another Cluster slot, so it is claimed here, after the apply, in the token index (which
 * also finds it by the subscription's id); every step can be replayed after a crash
 * (docs/architecture.md, "Partitions").
 */
export class OutboxSettler {
  private readonly tokens: TokenIndex;
  /** Until when 0.11.1's token records may be met; read once, after the layout upgrade. */
  private legacyUntil: Promise<number> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {
    this.tokens = new TokenIndex(redis, topology);
  }

  /** Settles every registration in the partition's outbox, read from it. */
  async settle(partition: number): Promise<void> {
    const outbox = this.topology.outbox(partition);
    for (;;) {
      const rows = toEntries(await this.redis.xrange(outbox, '-', '+', 'COUNT', READ_COUNT));
      if (rows.length === 0) return;
      await this.settleEntries(partition, rows.map((row) => ({ id: row.id, json: fieldOf(row, 'd') ?? '' })));
      if (rows.length < READ_COUNT) return;
    }
  }

  /** Settles these entries of the partition's outbox (an apply's reply names them), then deletes them. */
  async settleEntries(partition: number, entries: readonly ApplyEntry[]): Promise<void> {
    await Promise.all(entries.map((entry) => this.settleOne(parseRegistration(entry.json))));
    await this.redis.xdel(this.topology.outbox(partition), ...entries.map((entry) => entry.id));
  }

  /** Whether 0.11.1's token records may still be met (engine/state/users/layout.ts). */
  private async legacy(): Promise<boolean> {
    this.legacyUntil ??= legacyLayoutUntil(this.redis, this.topology).catch((err: unknown) => {
      this.legacyUntil = undefined;
      throw err;
    });
    return Date.now() < (await this.legacyUntil);
  }

  private async settleOne(reg: Registration | undefined): Promise<void> {
    if (!reg) return;
    const owed = await this.tokens.claim(reg.project, reg, reg.external_id, reg.registered_at, await this.legacy());
    await Promise.all(
      owed.map((detach) =>
        scripts
          .appendDetach(this.redis, {
            keys: { ingest: this.topology.ingest(this.topology.partitionOf(reg.project, detach.externalId)) },
            args: { entry: JSON.stringify(detachEntry(reg, detach)) },
          })
          .then(() => this.tokens.cleared(reg.project, reg, detach)),
      ),
    );
  }
}

function detachEntry(reg: Registration, detach: OwedDetach): IngestEntry {
  return {
    op: 'detach',
    project: reg.project,
    external_id: detach.externalId,
    at: Date.now(),
    type: reg.type,
    token: reg.token,
    registered_at: Number(detach.registeredAt),
  };
}

function parseRegistration(json: string): Registration | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  const type = r['type'];
  if (
    typeof r['project'] !== 'string' ||
    typeof r['external_id'] !== 'string' ||
    typeof r['token'] !== 'string' ||
    typeof r['registered_at'] !== 'number' ||
    !SubscriptionTypes.includes(type as SubscriptionType)
  ) {
    return undefined;
  }
  return {
    project: r['project'],
    external_id: r['external_id'],
    type: type as SubscriptionType,
    token: r['token'],
    registered_at: r['registered_at'],
  };
}
