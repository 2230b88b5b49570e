import t from 'tap';
import { Cluster, Redis } from 'ioredis';
import { SlotBatch, TickBatch } from '../../engine/infra/redis/tick-batch.ts';

t.test('calls made in one turn for one key go as one, in order; other keys and turns go apart', async (t) => {
  const sent: { context: string; items: number[] }[] = [];
  const batch = new TickBatch<string, number, number>(100, async (context, items) => {
    sent.push({ context, items: [...items] });
    return items.map((i) => i * 10);
  });
  const first = await Promise.all([batch.add('a', 'ctx a', 1), batch.add('b', 'ctx b', 2), batch.add('a', 'ignored', 3)]);
  t.same(first, [10, 20, 30], 'each call gets its own result');
  t.same(sent, [
    { context: 'ctx a', items: [1, 3] },
    { context: 'ctx b', items: [2] },
  ], "one send per key, with the first call's context");
  t.same(await batch.add('a', 'next turn', 4), 40);
  t.same(sent.at(-1), { context: 'next turn', items: [4] }, 'a later turn is a new batch');
});

t.test('a full batch goes at once, and a failed send fails every call in it', async (t) => {
  const sizes: number[] = [];
  let fail = false;
  const batch = new TickBatch<null, number, number>(2, async (_, items) => {
    sizes.push(items.length);
    if (fail) throw new Error('redis down');
    return items;
  });
  t.same(await Promise.all([1, 2, 3].map((i) => batch.add('k', null, i))), [1, 2, 3]);
  t.same(sizes, [2, 1], 'two items, then the rest at the end of the turn');
  fail = true;
  const failed = await Promise.allSettled([batch.add('k', null, 1), batch.add('k', null, 2)]);
  t.same(failed.map((r) => r.status), ['rejected', 'rejected']);
});

t.test("a slot batch sends a turn's calls in one on one Redis, and one a key on a Cluster", async (t) => {
  const standalone = new Redis({ lazyConnect: true });
  const cluster = new Cluster([], { lazyConnect: true });
  t.teardown(() => {
    standalone.disconnect();
    cluster.disconnect();
  });
  for (const [client, expected] of [
    [standalone, [['a', 'b', 'a2']]],
    [cluster, [['a', 'a2'], ['b']]],
  ] as const) {
    const sent: string[][] = [];
    const batch = new SlotBatch<string, string>(client, 100, async (items) => {
      sent.push([...items]);
      return items.map((i) => i.toUpperCase());
    });
    t.same(await Promise.all([batch.add('k1', 'a'), batch.add('k2', 'b'), batch.add('k1', 'a2')]), ['A', 'B', 'A2']);
    t.same(sent, expected, client instanceof Cluster ? 'one call a key on a Cluster' : 'one call on one Redis');
  }
});
