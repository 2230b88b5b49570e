import t from 'tap';
import { applyRole } from '../../actors/partition/role.ts';
import { fieldOf, toEntries } from '../../engine/infra/runner/types.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { REDIS_URL } from '../helpers/redis.ts';
import { ReplyDropper } from '../helpers/reply-dropper.ts';

// An XADD whose reply is lost has run in Redis; ioredis sends it again after reconnecting (or the
// write goes to the spill journal and is replayed): the entry is in the log twice. Before, both
// copies were applied and the event recorded twice.
t.test('an append whose reply is lost is applied once', async (t) => {
  const target = new URL(REDIS_URL);
  const proxy = await ReplyDropper.start({ host: target.hostname, port: Number(target.port || 6379) });
  t.teardown(() => proxy.close());
  const gw = await inProcessGateway(t, { REDIS_URL: proxy.url });
  const post = (seq: number): Promise<number> =>
    fetch(`${gw.url}/api/sdk/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.project.sdk_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ external_id: 'u1', name: 'tick', properties: { seq } }),
    }).then((r) => r.status);
  t.equal(await post(1), 202);
  const dropped = proxy.dropNextReply('XADD');
  t.equal(await post(2), 202, 'accepted although the first reply was lost');
  await dropped;
  t.equal(await post(3), 202);

  const partition = gw.topology.partitionOf(gw.project.project_id, 'u1');
  const logged = (await gw.redis.xrange(gw.topology.ingest(partition), '-', '+')).length;
  t.ok(logged > 3, `the lost append is in the log more than once (${logged} entries)`);
  await gw.run(applyRole);
  const events = await eventually('every entry applied', async () => {
    if ((await gw.redis.xlen(gw.topology.ingest(partition))) > 0 && (await gw.redis.get(gw.topology.applied(partition))) === null) return undefined;
    const pending = (await gw.redis.xpending(gw.topology.ingest(partition), 'apply')) as [number];
    if (pending[0] > 0) return undefined;
    const changes = toEntries(await gw.redis.xrange(gw.topology.changes(partition), '-', '+'));
    const seqs = changes.map((c) => JSON.parse(fieldOf(c, 'd') ?? '{}') as { kind: string; properties?: { seq: number } });
    const ticks = seqs.filter((c) => c.kind === 'event').map((c) => c.properties?.seq);
    return ticks.length >= 3 ? ticks : undefined;
  });
  t.same(events, [1, 2, 3], 'each event applied once, in order');
});
