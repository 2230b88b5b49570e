import { Change } from '../../schemas/changes.ts';
import { OutcomeEntry } from '../../schemas/outcomes.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { ConsumerLoop, BLOCK_MS } from '../../engine/infra/runner/consumer-loop.ts';
import type { PartitionWork } from '../../engine/infra/runner/partition-runner.ts';
import { fieldOf, type StreamEntry } from '../../engine/infra/runner/types.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { WEBHOOKS_GROUP } from '../../engine/infra/redis/topology.ts';
import { compileFirst } from '../../engine/infra/validation/validator.ts';
import type { EndpointCopy } from './endpoints.ts';
import { changeEvents, outcomeEvents, outcomeSources, type ProjectEvent } from './events.ts';
import type { EventItem, WebhookRegistry } from '../../engine/state/webhooks/registry.ts';

/** Most entries of one stream read at once. */
const READ_COUNT = 500;
/** How often a tap with no endpoint anywhere looks again, ms. */
const IDLE_MS = 500;
/**
 * How far before the oldest endpoint's creation a new group starts, ms: stream IDs come from
 * Redis's clock, creation times from a gateway's, and an event early is better than one lost.
 */
const CLOCK_MARGIN_MS = 5000;

/** Compiled on first use: a CLI command that loads this module never pays for them. */
let checks: { outcome: (v: unknown) => v is OutcomeEntry; change: (v: unknown) => v is Change } | undefined;
function entryChecks(): NonNullable<typeof checks> {
  checks ??= { outcome: compileFirst<OutcomeEntry>(OutcomeEntry), change: compileFirst<Change>(Change) };
  return checks;
}

export interface TapOptions {
  redis: RedisClient;
  registry: WebhookRegistry;
  endpoints: EndpointCopy;
  partition: number;
  /** The partition's outcomes and changes streams (one hash tag: one read serves both). */
  streams: { outcomes: string; changes: string };
  consumer: string;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
}

/**
 * Turns one owned partition's delivery outcomes and changes into webhook events (consumer group
 * `webhooks`) and appends each to the queue of every endpoint that takes its type; then
 * acknowledges the entries and trims the streams safely. A crash between the two queues the
 * same events again, under the same ids (docs/api.md#webhooks: at least once). No receiver is
 * ever waited for here: endpoint queues are drained by the senders.
 */
export class EventTap implements PartitionWork {
  private readonly loop: ConsumerLoop;
  private done: Promise<void> = Promise.resolve();
  /** Whether this tap reads the group (it exists only while some endpoint does). */
  private joined = false;

  constructor(private readonly opts: TapOptions) {
    const { redis, consumer, log, metrics, partition } = opts;
    this.loop = new ConsumerLoop({ redis, group: WEBHOOKS_GROUP, consumer, log, metrics, fields: { partition, role: 'webhooks' } });
  }

  start(): void {
    const { outcomes, changes } = this.opts.streams;
    this.done = this.loop.run({
      recover: async () => {
        this.joined = false;
      },
      turn: async () => {
        const { endpoints } = this.opts;
        // Until it joins, a tap only looks for a first endpoint: the process's taps share that look.
        await endpoints.refresh(this.joined ? 0 : IDLE_MS);
        if (endpoints.empty) {
          await this.leave();
          await this.loop.pause(IDLE_MS);
          return;
        }
        if (!this.joined) await this.join(endpoints.oldest());
        const read = await this.loop.read([outcomes, changes], READ_COUNT, BLOCK_MS);
        for (const [stream, entries] of read) if (entries.length > 0) await this.handle(stream, entries);
      },
    });
  }

  /**
   * Joins the streams' `webhooks` group, created to read from the oldest endpoint's creation
   * (less CLOCK_MARGIN_MS), and
   * handles what it has pending (a crashed owner's, a lost read's).
   */
  private async join(from: number): Promise<void> {
    for (const stream of this.streams()) {
      await this.loop.ensureGroup(stream, `${Math.max(0, from - CLOCK_MARGIN_MS)}-0`);
      await this.loop.claim(stream, { count: () => READ_COUNT }, (entries) => this.handle(stream, entries));
    }
    this.joined = true;
  }

  /**
   * With no endpoint left, the group goes: a group nobody reads would keep the recorder from
   * trimming the streams.
   */
  private async leave(): Promise<void> {
    if (!this.joined) return;
    for (const stream of this.streams()) await this.opts.redis.xgroup('DESTROY', stream, WEBHOOKS_GROUP);
    this.joined = false;
  }

  private streams(): string[] {
    return [this.opts.streams.outcomes, this.opts.streams.changes];
  }

  stop(): Promise<void> {
    this.loop.stop();
    return this.done;
  }

  private async handle(stream: string, entries: StreamEntry[]): Promise<void> {
    const { endpoints, registry, redis } = this.opts;
    await endpoints.refresh();
    if (!endpoints.empty) {
      const items: (EventItem & { endpoint: string })[] = [];
      for (const entry of entries) {
        for (const e of this.eventsOf(stream, entry)) {
          const takers = endpoints.takers(e.project, e.event.type);
          if (takers.length === 0) continue;
          const body = JSON.stringify(e.event);
          for (const endpoint of takers) items.push({ endpoint: endpoint.id, body, key: e.notification });
        }
      }
      await registry.enqueue(items);
    }
    const ids = entries.map((e) => e.id);
    await scripts.settleTapped(redis, { keys: { stream }, args: { group: WEBHOOKS_GROUP, lastId: ids[ids.length - 1] ?? '0-0' }, ids });
  }

  private eventsOf(stream: string, entry: StreamEntry): ProjectEvent[] {
    const json = fieldOf(entry, 'd');
    if (json === undefined) return [];
    const source = `${stream}/${entry.id}`;
    if (stream !== this.opts.streams.outcomes) return this.factEvents(json, source, false);
    return outcomeSources(source, json).flatMap((o) => this.factEvents(o.text, o.source, true));
  }

  /** The events of one recorded fact: an outcome, or a change. */
  private factEvents(json: string, source: string, isOutcome: boolean): ProjectEvent[] {
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      return [];
    }
    // Most entries are of projects without an endpoint: no schema check, no events for them.
    const project = typeof value === 'object' && value !== null ? (value as { project?: unknown }).project : undefined;
    if (typeof project !== 'string' || !this.opts.endpoints.has(project)) return [];
    const { outcome, change } = entryChecks();
    if (isOutcome) return outcome(value) ? outcomeEvents(source, value) : [];
    return change(value) ? changeEvents(source, value) : [];
  }
}
