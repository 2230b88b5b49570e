import { Webhook } from 'standardwebhooks';
import type { WebhookAttemptRow, WebhookEventType } from '../../schemas/webhooks.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import { refusedUrl, type OutboundPolicy } from '../../engine/infra/outbound/guard.ts';
import { Pause } from '../../engine/infra/runner/pause.ts';
import type { AttemptLog } from './attempt-log.ts';
import { backoffMs, type Backoff } from './backoff.ts';
import type { PostResult, WebhookHttp } from './http.ts';
import type { Endpoint, QueuedEvent, WebhookRegistry } from '../../engine/state/webhooks/registry.ts';

/** How long an idle sender waits before it looks at its queue again, ms. */
const IDLE_MS = 50;
/** Longest sleep between two looks at the endpoint's record (deleted, disabled), ms. */
const RECHECK_MS = 1000;

export interface SenderOptions {
  registry: WebhookRegistry;
  http: WebhookHttp;
  policy: OutboundPolicy;
  attempts: AttemptLog;
  backoff: Backoff;
  /** Most events in flight to the endpoint (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** Past this many queued events the endpoint is disabled (WEBHOOK_QUEUE_MAX). */
  queueMax: number;
  log: Logger;
}

/** One failed attempt, as the batch saw it. */
interface Failure {
  result: Extract<PostResult, { ok: false }>;
  at: number;
}

/**
 * Delivers one endpoint's queue, oldest first, while this process holds its lease
 * (docs/api.md#webhooks). Events of one notification go one after another and a failed one stops
 * them, so a receiver gets them in record order; other notifications' events go alongside, up to
 * WEBHOOK_CONCURRENCY at once. Any failure puts the whole endpoint into backoff; a 410 disables it,
 * and so does failing without a success for WEBHOOK_RETRY_WINDOW_MS. An event leaves the queue only
 * once delivered, so a crash sends it again with the same id.
 */
export class EndpointSender {
  private stopped = false;
  private readonly pause = new Pause();
  private done: Promise<void> = Promise.resolve();
  /** Attempts so far of events still queued (bounded by the queue's head). */
  private readonly tries = new Map<string, number>();
  private signer: { secret: string; webhook: Webhook } | undefined;

  constructor(
    readonly id: string,
    private readonly opts: SenderOptions,
  ) {}

  start(): void {
    this.done = this.run().catch((err: unknown) => this.opts.log.error('webhook sender failed', { webhook: this.id, err }));
  }

  stop(): Promise<void> {
    this.stopped = true;
    this.pause.wake();
    return this.done;
  }

  get running(): boolean {
    return !this.stopped;
  }

  private async run(): Promise<void> {
    const { registry, log } = this.opts;
    while (!this.stopped) {
      try {
        const endpoint = await registry.endpoint(this.id);
        if (endpoint === null || !endpoint.active) {
          this.stopped = true;
          break;
        }
        const due = endpoint.nextAttemptAt - Date.now();
        if (due > 0) {
          await this.sleep(Math.min(due, RECHECK_MS));
          continue;
        }
        const size = this.opts.concurrency * 8;
        const batch = await registry.head(this.id, size);
        if (batch.length === 0) {
          await this.sleep(IDLE_MS);
          continue;
        }
        if (batch.length === size && (await registry.queued(this.id)) > this.opts.queueMax) {
          await registry.disable(this.id, 'backlog_full', Date.now());
          log.warn('webhook endpoint disabled: its queue is full', { webhook: this.id, max: this.opts.queueMax });
          continue;
        }
        await this.deliver(endpoint, batch);
      } catch (err) {
        log.warn('webhook sender round failed; it goes on', { webhook: this.id, err });
        await this.sleep(RECHECK_MS);
      }
    }
  }

  /** Sends one batch from the queue's head and settles what came of it. */
  private async deliver(endpoint: Endpoint, batch: QueuedEvent[]): Promise<void> {
    const { registry, concurrency } = this.opts;
    let delivered: string[] = [];
    let count = 0;
    // Delivered events leave the queue a few at a time, so a crash sends few of them again.
    const settle = async (): Promise<void> => {
      const done = delivered;
      delivered = [];
      await registry.remove(this.id, done);
      for (const entry of done) this.tries.delete(entry);
    };
    let lastStatus = 0;
    let failure: Failure | undefined;
    let gone = false;
    const groups = orderGroups(batch);
    const next = (): QueuedEvent[] | undefined => groups.shift();
    const worker = async (): Promise<void> => {
      for (let group = next(); group !== undefined && failure === undefined; group = next()) {
        for (const event of group) {
          if (failure !== undefined || this.stopped) return;
          const at = Date.now();
          const result = await this.post(endpoint, event);
          if (result.ok) {
            delivered.push(event.entry);
            count += 1;
            lastStatus = result.status;
            if (delivered.length >= concurrency) await settle();
            continue;
          }
          failure ??= { result, at };
          if (result.status === 410) gone = true;
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, batch.length) }, worker));
    await settle();
    const now = Date.now();
    if (count > 0 && failure === undefined) await registry.succeeded(this.id, now, count, lastStatus);
    if (failure === undefined) return;
    if (gone) {
      await registry.disable(this.id, 'gone', now);
      this.opts.log.warn('webhook endpoint disabled: the receiver answered 410', { webhook: this.id });
      return;
    }
    const failures = (await registry.failuresInRow(this.id)) + 1;
    const wait = backoffMs(this.opts.backoff, failures, failure.result.retryAfterMs);
    const { status: statusCode, error } = failure.result;
    const since = await registry.failed(this.id, failure.at, { delivered: count, statusCode, error, nextAttemptAt: now + wait });
    if (now - since >= this.opts.backoff.windowMs) {
      await registry.disable(this.id, 'failing', now);
      this.opts.log.warn('webhook endpoint disabled: it kept failing', { webhook: this.id, failing_since: new Date(since).toISOString() });
    }
  }

  /** One signed POST of one event, recorded as an attempt. */
  private async post(endpoint: Endpoint, event: QueuedEvent): Promise<PostResult> {
    const attempt = (this.tries.get(event.entry) ?? 0) + 1;
    this.tries.set(event.entry, attempt);
    const { id, type } = JSON.parse(event.body) as { id: string; type: WebhookEventType };
    const at = Date.now();
    const refused = refusedUrl(this.opts.policy, 'webhook', endpoint.url);
    const result: PostResult =
      refused !== undefined
        ? { ok: false, status: null, latencyMs: 0, error: `the URL ${refused}` }
        : await this.opts.http.post(endpoint.url, this.headers(endpoint, id, event.body, at), event.body);
    const row: WebhookAttemptRow = {
      project: endpoint.project,
      webhook_id: this.id,
      event_id: id,
      event_type: type,
      notification_id: event.key,
      attempt,
      status: result.ok ? 'delivered' : 'failed',
      response_code: result.status ?? 0,
      latency_ms: result.latencyMs,
      error: result.ok ? '' : result.error,
      at,
    };
    this.opts.attempts.add(row);
    return result;
  }

  /** The Standard Webhooks headers: the id, the time in seconds, and the signature by the library. */
  private headers(endpoint: Endpoint, id: string, body: string, at: number): Record<string, string> {
    if (this.signer?.secret !== endpoint.secret) this.signer = { secret: endpoint.secret, webhook: new Webhook(endpoint.secret) };
    const time = new Date(at);
    return {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at / 1000)),
      'webhook-signature': this.signer.webhook.sign(id, time, body),
    };
  }

  private sleep(ms: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.pause.wait(ms);
  }
}

/**
 * The batch split into runs that must go in order: the events of one notification, in queue
 * order; an event about no notification runs alone.
 */
export function orderGroups(batch: readonly QueuedEvent[]): QueuedEvent[][] {
  const byKey = new Map<string, QueuedEvent[]>();
  const groups: QueuedEvent[][] = [];
  for (const event of batch) {
    if (event.key === '') {
      groups.push([event]);
      continue;
    }
    let group = byKey.get(event.key);
    if (group === undefined) {
      group = [];
      byKey.set(event.key, group);
      groups.push(group);
    }
    group.push(event);
  }
  return groups;
}
