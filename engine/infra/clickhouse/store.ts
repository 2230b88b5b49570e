import type { Config } from '../../../schemas/config.ts';
import { UnavailableError } from '../../../schemas/errors.ts';
import type { Logger } from '../process/log.ts';
import { clickHouseLocation, hostEndpoint, openClickHouse, type ClickHouse } from './client.ts';
import { migrate, unfinishedRewrites } from './migrations.ts';

/** How long a readiness ping waits for ClickHouse. */
const PING_TIMEOUT_MS = 1000;

/**
 * The process's one ClickHouse client, shared by its roles because the embedded engine binds its
 * data directory to one process. Opened and migrated on first use; a failed open is retried by the
 * next call, and so is a client whose embedded engine's process ended (killed, out of memory).
 * close() is idempotent.
 */
export class ClickHouseStore {
  private opening: Promise<ClickHouse> | undefined;
  /** The client `opening` resolved to. */
  private current: ClickHouse | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly config: Pick<Config, 'CLICKHOUSE_URL' | 'CLICKHOUSE_SANDBOX' | 'DATA_DIR'>,
    private readonly log: Logger,
  ) {}

  /** Where the client points, for messages. */
  get location(): string {
    return clickHouseLocation(this.config);
  }

  /** The migrated client; rejects when ClickHouse cannot be opened or migrated now. */
  get(): Promise<ClickHouse> {
    if (this.closing) return Promise.reject(new UnavailableError('the ClickHouse store is closed'));
    this.opening ??= this.open().catch((err: unknown) => {
      this.opening = undefined;
      throw err;
    });
    return this.opening;
  }

  /** True when ClickHouse opens and answers within a second (GET /readyz). */
  async ping(): Promise<boolean> {
    try {
      const ch = await this.get();
      const answer = await ch.ping({ select: true, abort_signal: AbortSignal.timeout(PING_TIMEOUT_MS) });
      return answer.success;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const ch = await this.opening?.catch(() => undefined);
      await ch?.close();
    })();
    return this.closing;
  }

  /** The embedded engine's process ended under a live store: the next call opens it again. */
  private lost(ch: ClickHouse, code: number | null): void {
    if (this.closing || this.current !== ch) return;
    this.current = undefined;
    this.log.error('the embedded ClickHouse process ended; it is started again on the next use', { code });
    this.opening = undefined;
    void ch.close().catch(() => undefined);
  }

  private async open(): Promise<ClickHouse> {
    const ch = await openClickHouse(this.config, this.log);
    try {
      const applied = await migrate(ch);
      for (const m of applied) this.log.info('migration applied', { version: m.version, name: m.name });
      for (const r of await unfinishedRewrites(ch)) {
        this.log.info('rewrite running in the background', { table: r.table, command: r.command, parts_left: r.partsLeft, failure: r.failure || undefined });
      }
      this.current = ch;
      void hostEndpoint(ch)?.exited.then((code) => this.lost(ch, code));
      return ch;
    } catch (err) {
      await ch.close().catch(() => undefined);
      throw err;
    }
  }
}
