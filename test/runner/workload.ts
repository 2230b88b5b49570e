import { appendEntry } from '../../engine/infra/redis/append.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { Change } from '../../schemas/changes.ts';
import type { Harness } from '../actors/harness.ts';

/**
 * A reproducible mix of ingest entries over many users and the state they must end in: tag
 * counters written as sets (last write wins), tag deletes, own and shared subscriptions (a shared
 * token ends with its newest registrant), events with and without idempotency keys (some retried)
 * and receipts. `at` rises by one per entry, so "newest" is "written last".
 */
export class Workload {
  private readonly tags = new Map<string, Map<string, string>>();
  private readonly subs = new Map<string, Set<string>>();
  private readonly sharedOwner = new Map<string, string>();
  private readonly seq = new Map<string, number>();
  private readonly keysSeen = new Set<string>();
  /** Indexes (in `written`) of the entries whose change must appear exactly once. */
  private readonly expectChange: number[] = [];
  private readonly written: IngestEntry[] = [];
  private ids: string[] = [];
  private readonly random: () => number;
  private at: number;

  constructor(
    private readonly project: string,
    private readonly users: number,
    seed = 1,
  ) {
    let state = seed;
    this.random = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    this.at = Date.now();
  }

  /** Makes the next `count` entries and records their effect in the model. */
  next(count: number): IngestEntry[] {
    const out: IngestEntry[] = [];
    for (let i = 0; i < count; i++) {
      const entry = this.one();
      this.written.push(entry);
      out.push(entry);
    }
    return out;
  }

  /** Appends entries pipelined on one connection (so stream order is array order) and keeps their IDs. */
  async append(h: Harness, entries: IngestEntry[]): Promise<void> {
    const ids = await Promise.all(entries.map((e) => appendEntry(h.redis, h.topology, e)));
    this.ids.push(...ids);
    for (const [i, e] of entries.entries()) h.track(e, ids[i] ?? '');
  }

  /** Differences between the applied state and the model (empty when they agree). */
  async check(h: Harness): Promise<string[]> {
    const problems: string[] = [];
    for (let u = 0; u < this.users; u++) {
      const user = `user-${u}`;
      const state = await h.state(this.project, user);
      const wantTags = Object.fromEntries([...(this.tags.get(user) ?? new Map<string, string>())].sort());
      const gotTags = Object.fromEntries(Object.entries(state.tags).sort());
      if (JSON.stringify(wantTags) !== JSON.stringify(gotTags)) problems.push(`${user} tags ${JSON.stringify(gotTags)} != ${JSON.stringify(wantTags)}`);
      const wantSubs = [...(this.subs.get(user) ?? [])];
      for (const [token, owner] of this.sharedOwner) if (owner === user) wantSubs.push(`EMAIL:${token}`);
      const gotSubs = Object.keys(state.subs).sort();
      if (JSON.stringify(wantSubs.sort()) !== JSON.stringify(gotSubs)) problems.push(`${user} subs ${gotSubs.join(',')} != ${wantSubs.join(',')}`);
    }
    const changes = await h.changes();
    // Stream IDs are unique per partition stream only; with the user they name one change.
    const seen = new Map<string, number>();
    for (const c of changes) seen.set(`${c.external_id} ${c.id}`, (seen.get(`${c.external_id} ${c.id}`) ?? 0) + 1);
    const want = new Set(this.expectChange.map((i) => `${this.written[i]?.external_id} ${this.ids[i]}`));
    for (const id of want) if (seen.get(id) !== 1) problems.push(`change ${id} recorded ${seen.get(id) ?? 0} times`);
    for (const id of seen.keys()) if (!want.has(id)) problems.push(`unexpected change ${id}`);
    problems.push(...this.orderProblems(changes));
    return problems;
  }

  /** Each user's events carry a rising `seq` property: in the changes stream they must rise too. */
  private orderProblems(changes: Change[]): string[] {
    const last = new Map<string, number>();
    const problems: string[] = [];
    for (const c of changes) {
      if (c.kind !== 'event') continue;
      const seq = Number(c.properties?.['seq']);
      if (seq <= (last.get(c.external_id) ?? -1)) problems.push(`${c.external_id} event ${seq} after ${last.get(c.external_id)}`);
      last.set(c.external_id, seq);
    }
    return problems;
  }

  private one(): IngestEntry {
    const u = Math.floor(this.random() * this.users);
    const user = `user-${u}`;
    const at = this.at++;
    const base = { project: this.project, external_id: user, at };
    const seq = (this.seq.get(user) ?? 0) + 1;
    this.seq.set(user, seq);
    const tags = this.tags.get(user) ?? new Map<string, string>();
    this.tags.set(user, tags);
    const roll = this.random();
    const index = this.written.length;
    if (roll < 0.35) {
      tags.set('count', `n${seq}`);
      const entry: Record<string, string> = { count: `n${seq}` };
      if (seq % 5 === 0) {
        entry['flag'] = '';
        tags.delete('flag');
      } else if (seq % 3 === 0) {
        entry['flag'] = `s${seq}`;
        tags.set('flag', `s${seq}`);
      }
      return { op: 'tags', ...base, tags: entry };
    }
    if (roll < 0.45) {
      tags.set('name', `s${user}-${seq}`);
      return { op: 'identify', ...base, tags: { name: `s${user}-${seq}` } };
    }
    if (roll < 0.55) {
      const token = `${user}-${seq % 3}@example.com`;
      const own = this.subs.get(user) ?? new Set<string>();
      own.add(`EMAIL:${token}`);
      this.subs.set(user, own);
      return { op: 'subscribe', ...base, type: 'EMAIL', token };
    }
    if (roll < 0.6) {
      const token = `shared-${seq % 4}@example.com`;
      this.sharedOwner.set(token, user);
      return { op: 'subscribe', ...base, type: 'EMAIL', token };
    }
    if (roll < 0.85) {
      // Retry a key now and then: the same key as this user's previous keyed event.
      const key = this.random() < 0.3 && seq > 1 ? `${user}-key-${seq - 1}` : `${user}-key-${seq}`;
      if (!this.keysSeen.has(key)) {
        this.keysSeen.add(key);
        this.expectChange.push(index);
      }
      return { op: 'event', ...base, name: 'keyed', ts: at, idempotency_key: key, properties: { seq } };
    }
    if (roll < 0.95) {
      this.expectChange.push(index);
      return { op: 'event', ...base, name: 'plain', ts: at, properties: { seq } };
    }
    this.expectChange.push(index);
    return { op: 'receipt', ...base, svc_message_id: `m-${seq}`, kind: 'delivered', ts: at };
  }
}
