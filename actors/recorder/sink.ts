import type { ClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { insertJsonLines } from '../../engine/infra/clickhouse/insert.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { readHashes, type UserHashes } from '../../engine/state/users/read-user.ts';
import { summaryOfRecord } from '../../engine/state/users/user-record.ts';
import type { UserChange } from '../../schemas/changes.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { inSlices } from './slices.ts';
import { checkedDeliveryLines, deliveryLines, eventRow, parseChange, receiptRow, recordsOf, summaryOfHashes, userRow } from './rows.ts';

/** A user's four hashes as a change carries them. */
type UserState = NonNullable<UserChange['state']>;

/** Where outcomes are inserted: a landing table whose view fills message_deliveries (migration 0007). */
const OUTCOMES_TABLE = 'message_deliveries_in';

/** Which stream a batch came from: they hold different entries. */
export type StreamKind = 'changes' | 'outcomes';

/**
 * Turns one batch of stream entries into ClickHouse rows and inserts them, one insert per table,
 * each with the batch's deduplication token: a batch inserted again after a crash (the same
 * entries, so the same token) is dropped by ClickHouse, table by table.
 */
export class RecorderSink {
  constructor(
    private readonly ch: ClickHouse,
    private readonly redis: RedisClient,
    private readonly topology: Topology,
    private readonly metrics: Pick<Metrics, 'recordedRows'>,
    private readonly log: Logger,
  ) {}

  async record(kind: StreamKind, entries: RawStreamEntry[], token: string): Promise<void> {
    if (kind === 'outcomes') return this.recordOutcomes(entries, token);
    return this.recordChanges(entries, token);
  }

  /**
   * The entries' own JSON goes to ClickHouse unparsed and is checked there; only a refused batch
   * is checked here, entry by entry (docs/architecture.md, "The recorder"). A refusal of valid
   * entries is ClickHouse failing, and is thrown to be retried.
   */
  private async recordOutcomes(entries: RawStreamEntry[], token: string): Promise<void> {
    const rows = deliveryLines(entries);
    let refusal: unknown;
    if (rows !== null) {
      try {
        await insertJsonLines(this.ch, OUTCOMES_TABLE, rows.lines, token);
        this.metrics.recordedRows.labels('message_deliveries').inc(rows.rows);
        this.publish(rows.lines);
        return;
      } catch (err) {
        refusal = err;
      }
    }
    const checked = checkedDeliveryLines(entries);
    if (checked.invalid === 0 && refusal !== undefined) throw refusal;
    this.reportInvalid('outcomes', checked.invalid, token);
    if (checked.rows === 0) return;
    await insertJsonLines(this.ch, OUTCOMES_TABLE, checked.lines, token);
    this.metrics.recordedRows.labels('message_deliveries').inc(checked.rows);
    this.publish(checked.lines);
  }

  /**
   * The inserted lines (JSON, one record a line) go to the live tail's channel as they are: no
   * parse here, and nobody waits for it. A round inserted again by a recovery is published again.
   */
  private publish(lines: Buffer): void {
    this.redis.publish(this.topology.liveDeliveries(), lines).catch((err: unknown) => this.log.warn('live delivery records not published', { err }));
  }

  /**
   * Events and receipts become rows as they are. A `user` change, and each user of a `users`
   * change, becomes one row per user and batch, versioned by the user's last change in it: the
   * state that change holds (a `users` change's record of the user, or the four hashes an earlier
   * release's `user` change holds), or, from a change without one (a consent write), the user's
   * current state read from Redis. A round holds every partition's batch, thousands of entries:
   * they are turned into JSON lines a slice at a time, and the event loop turns between slices, so
   * the gateway and the apply rounds sharing it do not wait for a whole round.
   */
  private async recordChanges(raw: RawStreamEntry[], token: string): Promise<void> {
    const events: string[] = [];
    const receipts: string[] = [];
    const users = new Map<string, LatestState>();
    let invalid = 0;
    // A later change of a user replaces an earlier one's state: the row is the batch's last.
    const latest = (project: string, externalId: string, state: LatestState['state'], streamId: string): void => {
      users.set(`${project}\0${externalId}`, { project, externalId, state, streamId });
    };
    await inSlices(raw, (entry) => {
      const change = parseChange(entry);
      if (change === null) invalid++;
      else if (change.kind === 'event') events.push(JSON.stringify(eventRow(change)));
      else if (change.kind === 'receipt') receipts.push(JSON.stringify(receiptRow(change)));
      else if (change.kind === 'user') latest(change.project, change.external_id, change.state, entry.id);
      else {
        const records = recordsOf(entry);
        change.users.forEach((user, i) => {
          const state = records[i];
          if (state === undefined) invalid++;
          else latest(user.project, user.external_id, state, entry.id);
        });
      }
    });
    this.reportInvalid('changes', invalid, token);
    const states: string[] = [];
    const unread: LatestState[] = [];
    const addRow = (row: ReturnType<typeof userRow>): void => {
      if (row !== null) states.push(JSON.stringify(row));
    };
    await inSlices([...users.values()], (user) => {
      const { project, externalId, state, streamId } = user;
      if (state === undefined) unread.push(user);
      else addRow(userRow(project, externalId, Buffer.isBuffer(state) ? summaryOfRecord(state) : summaryOfHashes(hashesOf(state)), streamId));
    });
    const read = await Promise.all(
      unread.map(async ({ project, externalId, streamId }) => userRow(project, externalId, summaryOfHashes(await readHashes(this.redis, this.topology, project, externalId)), streamId)),
    );
    read.forEach(addRow);
    await this.insert('events', events, token);
    await this.insert('receipts', receipts, token);
    await this.insert('users', states, token);
  }

  private async insert(table: string, lines: string[], token: string): Promise<void> {
    if (lines.length === 0) return;
    await insertJsonLines(this.ch, table, Buffer.from(lines.join('\n')), token);
    this.metrics.recordedRows.labels(table).inc(lines.length);
  }

  private reportInvalid(stream: StreamKind, count: number, token: string): void {
    if (count > 0) this.log.warn('invalid stream entries skipped', { stream, count, batch: token });
  }
}

/** A user's state as a round's last change of it holds it: its record, its four hashes, or none (read it). */
interface LatestState {
  project: string;
  externalId: string;
  state: Buffer | UserState | undefined;
  streamId: string;
}

/** The hashes of a change's state, each a field, value, ... list as HGETALL returned it. */
function hashesOf(state: UserState): UserHashes {
  const record = (flat: string[]): Record<string, string> => {
    // No prototype: a tag may be named "__proto__".
    const out = Object.create(null) as Record<string, string>;
    for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  };
  return { user: record(state.user), tags: record(state.tags), subs: record(state.subs), consent: record(state.consent) };
}
