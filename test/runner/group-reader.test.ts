import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { ensureGroup } from '../../engine/infra/runner/consumer-loop.ts';
import { GroupReader, type ReaderMember } from '../../engine/infra/runner/group-reader.ts';
import type { StreamEntry } from '../../engine/infra/runner/types.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';

// The shared reader with plain members against real Redis: reads are long (BLOCK 5 s), so a
// member served in well under that shows that its join or a round cut the blocked read short.
const BLOCK_MS = 5000;

async function setup(t: Test) {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  const reader = new GroupReader({ redis, group: 'g', consumer: 'c', batchSize: 100, lingerMs: 0, blockMs: BLOCK_MS, log: createLogger('error'), metrics: new Metrics() });
  const members: Member[] = [];
  t.teardown(async () => {
    await Promise.all(members.map((m) => reader.leave(m)));
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const member = async (partition: number): Promise<Member> => {
    const m = new Member(partition, `${prefix}s${partition}`);
    await ensureGroup(redis, m.stream, 'g');
    members.push(m);
    return m;
  };
  return { redis, reader, member };
}

class Member implements ReaderMember {
  readonly taken: { id: string; at: number }[] = [];
  prepared = 0;
  constructor(
    readonly partition: number,
    readonly stream: string,
  ) {}
  async prepare(): Promise<boolean> {
    this.prepared++;
    return true;
  }
  async take(entries: StreamEntry[]): Promise<boolean> {
    for (const e of entries) this.taken.push({ id: e.id, at: Date.now() });
    return true;
  }
}

const until = async (what: string, check: () => boolean, ms = BLOCK_MS - 1000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

t.test('one read serves every member; a member that joins while it blocks is read at once', async (t) => {
  const { redis, reader, member } = await setup(t);
  const a = await member(1);
  reader.join(a);
  await until('a prepared', () => a.prepared === 1);
  await new Promise((r) => setTimeout(r, 200));
  const b = await member(2);
  reader.join(b);
  await until('b prepared', () => b.prepared === 1);
  const sent = Date.now();
  const [ida, idb] = [await redis.xadd(a.stream, '*', 'd', '1'), await redis.xadd(b.stream, '*', 'd', '2')];
  await until('both taken', () => a.taken.length === 1 && b.taken.length === 1);
  t.same([a.taken[0]?.id, b.taken[0]?.id], [ida, idb], 'each member gets its own entries');
  t.ok((b.taken[0]?.at ?? Infinity) - sent < BLOCK_MS - 1000, 'b was read without waiting out the blocked read');
});

t.test('a member that left is not read; its entries stay pending for the next owner', async (t) => {
  const { redis, reader, member } = await setup(t);
  const [a, b] = [await member(3), await member(4)];
  reader.join(a);
  reader.join(b);
  await until('both prepared', () => a.prepared === 1 && b.prepared === 1);
  await reader.leave(b);
  await redis.xadd(b.stream, '*', 'd', 'x');
  const id = await redis.xadd(a.stream, '*', 'd', 'y');
  await until('a taken', () => a.taken.length === 1);
  t.equal(a.taken[0]?.id, id);
  t.same(b.taken, [], 'nothing handed to a member that left');
  const [unread] = (await redis.xinfo('GROUPS', b.stream)) as unknown[][];
  t.equal(unread?.[unread.indexOf('lag') + 1], 1, "b's entry is still unread in the group");
});
