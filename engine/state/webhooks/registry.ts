import { randomBytes, randomUUID } from 'node:crypto';
import {
  WebhookEventTypes,
  type Webhook,
  type WebhookBody,
  type WebhookDisabledReason,
  type WebhookEventType,
  type WebhookHealth,
  type WebhookWithHealth,
} from '../../../schemas/webhooks.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { WebhookKeys } from './redis-keys.ts';

/**
 * Webhook endpoints: this module is the only code that reads or writes their keys
 * (docs/api.md#webhooks).
 *
 * Keys (names from engine/infra/redis/topology.ts):
 * - `webhook:{w:<id>}`, the record (hash): `project`, `url`, `events` (comma-separated), `secret`,
 *   `created_at`, and the health fields its sender keeps (HealthField);
 * - `whq:{w:<id>}`, its queue of events (stream, oldest first: field `e` the POST body, `k` the
 *   order key, the notification the event is about);
 * - `project:<project>:webhooks` and `webhooks`: the ids of a project's and of every endpoint;
 * - `webhooks:version`, bumped when an endpoint is created, deleted or disabled, so the processes
 *   that copy the endpoints (the event tap, the watcher) reload them.
 *
 * Life: create (`active`) → events queued by the tap and the watcher → delivered by the one sender
 * that holds its lease, which records each success and failure here → disabled on a 410, after
 * failing for WEBHOOK_RETRY_WINDOW_MS, or with a queue past WEBHOOK_QUEUE_MAX → deleted.
 */

/** An endpoint as the tap and the senders need it. */
export interface Endpoint {
  id: string;
  project: string;
  url: string;
  events: ReadonlySet<WebhookEventType>;
  secret: string;
  active: boolean;
  /** When it was created, ms. */
  createdAt: number;
  /** When its next attempt is due while it fails (ms), 0 when it may be tried now. */
  nextAttemptAt: number;
}

/** One event for one endpoint: the POST body, and its order key (the notification, '' for none). */
export interface EventItem {
  body: string;
  key: string;
}

/** One queued event with its queue entry id. */
export interface QueuedEvent extends EventItem {
  entry: string;
}

const HealthField = {
  state: 'state',
  disabledReason: 'disabled_reason',
  disabledAt: 'disabled_at',
  failuresInRow: 'failures_in_row',
  failingSince: 'failing_since',
  nextAttemptAt: 'next_attempt_at',
  lastAttemptAt: 'last_attempt_at',
  lastSuccessAt: 'last_success_at',
  lastStatusCode: 'last_status_code',
  lastError: 'last_error',
  delivered: 'delivered',
  failedAttempts: 'failed_attempts',
} as const;

/** A new Standard Webhooks secret: 32 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export class WebhookRegistry {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  async create(project: string, body: WebhookBody, now = new Date()): Promise<Webhook> {
    const { redis, topology } = this;
    const webhook: Webhook = {
      id: randomUUID(),
      url: body.url,
      events: WebhookEventTypes.filter((t) => body.events.includes(t)),
      secret: body.secret ?? newSecret(),
      created_at: now.toISOString(),
    };
    await redis.hset(topology.own(WebhookKeys).webhook(webhook.id), {
      project,
      url: webhook.url,
      events: webhook.events.join(','),
      secret: webhook.secret,
      created_at: webhook.created_at,
      [HealthField.state]: 'active',
    });
    await redis.sadd(topology.own(WebhookKeys).projectWebhooks(project), webhook.id);
    await redis.sadd(topology.own(WebhookKeys).webhooks(), webhook.id);
    await redis.incr(topology.own(WebhookKeys).webhooksVersion());
    return webhook;
  }

  /** The project's endpoint with its health, or null when it has none of that id. */
  async get(project: string, id: string): Promise<WebhookWithHealth | null> {
    const [h, queued] = await Promise.all([this.redis.hgetall(this.topology.own(WebhookKeys).webhook(id)), this.queued(id)]);
    if (h['project'] !== project) return null;
    return withHealth(id, h, queued);
  }

  /** Every endpoint of the project, oldest first. */
  async list(project: string): Promise<WebhookWithHealth[]> {
    const ids = await this.redis.smembers(this.topology.own(WebhookKeys).projectWebhooks(project));
    const found = await Promise.all(ids.map((id) => this.get(project, id)));
    return found.filter((w): w is WebhookWithHealth => w !== null).sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  }

  /** Deletes an endpoint with its queue and answers it as it was; null when there was none. */
  async delete(project: string, id: string): Promise<WebhookWithHealth | null> {
    const { redis, topology } = this;
    const webhook = await this.get(project, id);
    if (webhook === null) return null;
    await redis.srem(topology.own(WebhookKeys).projectWebhooks(project), id);
    await redis.srem(topology.own(WebhookKeys).webhooks(), id);
    await redis.del(topology.own(WebhookKeys).webhook(id), topology.own(WebhookKeys).webhookQueue(id), topology.own(WebhookKeys).webhookLease(id));
    await redis.incr(topology.own(WebhookKeys).webhooksVersion());
    return webhook;
  }

  /** The version of the set of endpoints: it changes whenever one is created, deleted or disabled. */
  async version(): Promise<string> {
    return (await this.redis.get(this.topology.own(WebhookKeys).webhooksVersion())) ?? '0';
  }

  /** Every endpoint's id. */
  /** The lease of the one webhooks process that sends to endpoint `id` (actors/webhooks/senders.ts holds it; delete removes it). */
  senderLease(id: string): string {
    return this.topology.own(WebhookKeys).webhookLease(id);
  }

  ids(): Promise<string[]> {
    return this.redis.smembers(this.topology.own(WebhookKeys).webhooks());
  }

  /** One endpoint, or null when it is gone. */
  async endpoint(id: string): Promise<Endpoint | null> {
    return endpointOf(id, await this.redis.hgetall(this.topology.own(WebhookKeys).webhook(id)));
  }

  /** Every endpoint, by project. */
  async byProject(): Promise<Map<string, Endpoint[]>> {
    const ids = await this.ids();
    const found = await Promise.all(ids.map((id) => this.endpoint(id)));
    const out = new Map<string, Endpoint[]>();
    for (const e of found) {
      if (e === null) continue;
      const list = out.get(e.project) ?? [];
      list.push(e);
      out.set(e.project, list);
    }
    return out;
  }

  /** Appends events to the queues of endpoints, one script call per endpoint (it runs at maxmemory too). */
  async enqueue(items: readonly (EventItem & { endpoint: string })[]): Promise<void> {
    const byEndpoint = new Map<string, EventItem[]>();
    for (const { endpoint, body, key } of items) {
      const list = byEndpoint.get(endpoint) ?? [];
      list.push({ body, key });
      byEndpoint.set(endpoint, list);
    }
    await Promise.all([...byEndpoint].map(([endpoint, events]) => scripts.queueEvents(this.redis, { keys: { queue: this.topology.own(WebhookKeys).webhookQueue(endpoint) }, args: {}, events })));
  }

  /** The oldest `count` events of an endpoint's queue. */
  async head(id: string, count: number): Promise<QueuedEvent[]> {
    const reply = await this.redis.xrange(this.topology.own(WebhookKeys).webhookQueue(id), '-', '+', 'COUNT', count);
    return reply.map(([entry, fields]) => ({ entry, body: fields[1] ?? '{}', key: fields[3] ?? '' }));
  }

  /** Removes delivered events from an endpoint's queue. */
  async remove(id: string, entries: readonly string[]): Promise<void> {
    if (entries.length > 0) await this.redis.xdel(this.topology.own(WebhookKeys).webhookQueue(id), ...entries);
  }

  queued(id: string): Promise<number> {
    return this.redis.xlen(this.topology.own(WebhookKeys).webhookQueue(id));
  }

  /** Records delivered attempts: the endpoint is healthy again. */
  async succeeded(id: string, at: number, delivered: number, statusCode: number): Promise<void> {
    const key = this.topology.own(WebhookKeys).webhook(id);
    if ((await this.redis.exists(key)) === 0) return;
    await this.redis
      .multi()
      .hset(key, {
        [HealthField.failuresInRow]: '0',
        [HealthField.lastAttemptAt]: String(at),
        [HealthField.lastSuccessAt]: String(at),
        [HealthField.lastStatusCode]: String(statusCode),
      })
      .hdel(key, HealthField.failingSince, HealthField.nextAttemptAt, HealthField.lastError)
      .hincrby(key, HealthField.delivered, delivered)
      .exec();
  }

  /**
   * Records a failed attempt (and the events delivered alongside it) and when the next attempt is
   * due; answers since when the endpoint has been failing (this failure's time when it was healthy).
   */
  async failed(id: string, at: number, failure: { delivered: number; statusCode: number | null; error: string; nextAttemptAt: number }): Promise<number> {
    const { delivered, statusCode, error, nextAttemptAt } = failure;
    const key = this.topology.own(WebhookKeys).webhook(id);
    // A sender may finish its batch after the endpoint was deleted: its record is not made again.
    if ((await this.redis.exists(key)) === 0) return at;
    const replies = await this.redis
      .multi()
      .hsetnx(key, HealthField.failingSince, String(at))
      .hset(key, {
        [HealthField.lastAttemptAt]: String(at),
        [HealthField.lastStatusCode]: statusCode === null ? '' : String(statusCode),
        [HealthField.lastError]: error,
        [HealthField.nextAttemptAt]: String(nextAttemptAt),
      })
      .hincrby(key, HealthField.failuresInRow, 1)
      .hincrby(key, HealthField.failedAttempts, 1)
      .hincrby(key, HealthField.delivered, delivered)
      .hget(key, HealthField.failingSince)
      .exec();
    const since = replies?.[5]?.[1];
    return typeof since === 'string' ? Number(since) : at;
  }

  /** Attempts failed in a row since the endpoint's last success. */
  async failuresInRow(id: string): Promise<number> {
    return Number((await this.redis.hget(this.topology.own(WebhookKeys).webhook(id), HealthField.failuresInRow)) ?? 0);
  }

  /** Disables an endpoint for good: nothing more is queued or sent. */
  async disable(id: string, reason: WebhookDisabledReason, at: number): Promise<void> {
    const key = this.topology.own(WebhookKeys).webhook(id);
    if ((await this.redis.exists(key)) === 0) return;
    await this.redis.hset(key, { [HealthField.state]: 'disabled', [HealthField.disabledReason]: reason, [HealthField.disabledAt]: String(at) });
    await this.redis.hdel(key, HealthField.nextAttemptAt);
    await this.redis.incr(this.topology.own(WebhookKeys).webhooksVersion());
  }
}

function endpointOf(id: string, h: Record<string, string>): Endpoint | null {
  const { project, url, secret, events } = h;
  if (project === undefined || url === undefined || secret === undefined) return null;
  const createdAt = Date.parse(h['created_at'] ?? '');
  return {
    id,
    project,
    url,
    secret,
    events: new Set(eventsOf(events)),
    active: h[HealthField.state] !== 'disabled',
    createdAt: Number.isNaN(createdAt) ? 0 : createdAt,
    nextAttemptAt: Number(h[HealthField.nextAttemptAt] ?? 0),
  };
}

function eventsOf(stored: string | undefined): WebhookEventType[] {
  const listed = new Set((stored ?? '').split(','));
  return WebhookEventTypes.filter((t) => listed.has(t));
}

const timeOf = (ms: string | undefined): string | null => (ms === undefined || ms === '' ? null : new Date(Number(ms)).toISOString());

function withHealth(id: string, h: Record<string, string>, queued: number): WebhookWithHealth {
  const reason = h[HealthField.disabledReason];
  const status = h[HealthField.lastStatusCode];
  const health: WebhookHealth = {
    state: h[HealthField.state] === 'disabled' ? 'disabled' : 'active',
    disabled_reason: reason === 'gone' || reason === 'failing' || reason === 'backlog_full' ? reason : null,
    disabled_at: timeOf(h[HealthField.disabledAt]),
    queued,
    failures_in_row: Number(h[HealthField.failuresInRow] ?? 0),
    failing_since: timeOf(h[HealthField.failingSince]),
    next_attempt_at: timeOf(h[HealthField.nextAttemptAt]),
    last_attempt_at: timeOf(h[HealthField.lastAttemptAt]),
    last_success_at: timeOf(h[HealthField.lastSuccessAt]),
    last_status_code: status === undefined || status === '' ? null : Number(status),
    last_error: h[HealthField.lastError] ?? null,
    delivered: Number(h[HealthField.delivered] ?? 0),
    failed_attempts: Number(h[HealthField.failedAttempts] ?? 0),
  };
  return {
    id,
    url: h['url'] ?? '',
    events: eventsOf(h['events']),
    secret: h['secret'] ?? '',
    created_at: h['created_at'] ?? '',
    health,
  };
}
