import type { WebhookAttemptRow } from '../../schemas/webhooks.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';

/** Most attempt records held while ClickHouse does not take them; past it the oldest go. */
const MAX_HELD = 50_000;
/** How often held records are inserted, ms. */
const FLUSH_MS = 1000;

/**
 * Every webhook attempt, recorded into ClickHouse (`webhook_attempts`) in one insert a second. The
 * records are a log of what was tried, not the events: the queue keeps those, so a ClickHouse
 * that is away costs records past MAX_HELD (counted and logged), never an event.
 */
export class AttemptLog {
  private held: WebhookAttemptRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private dropped = 0;

  constructor(
    private readonly insert: (rows: readonly WebhookAttemptRow[]) => Promise<void>,
    private readonly metrics: Pick<Metrics, 'webhookAttempts' | 'webhookAttemptsDropped'>,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
  }

  add(row: WebhookAttemptRow): void {
    this.metrics.webhookAttempts.labels(row.status).inc();
    this.held.push(row);
    if (this.held.length > MAX_HELD) {
      const over = this.held.length - MAX_HELD;
      this.held.splice(0, over);
      this.dropped += over;
      this.metrics.webhookAttemptsDropped.inc(over);
    }
  }

  /** Inserts what is held; on failure keeps it for the next flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.dropped > 0) {
        this.log.warn('webhook attempt records dropped: ClickHouse took none for too long', { dropped: this.dropped });
        this.dropped = 0;
      }
      const rows = this.held;
      if (rows.length === 0) return;
      this.held = [];
      try {
        await this.insert(rows);
      } catch (err) {
        this.held = rows.concat(this.held).slice(-MAX_HELD);
        this.log.warn('webhook attempt records not inserted; kept for the next try', { rows: rows.length, err });
      }
    });
    return this.flushing;
  }

  /** Stops the timer and inserts what is held, once. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
