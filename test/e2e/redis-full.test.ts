import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import t from 'tap';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import {
  appliedCount,
  compare,
  fillWithLiveState,
  freeLiveState,
  ingestOrder,
  keepIngestLog,
  Ledger,
  metric,
  recordedOf,
  redisMemory,
  USERS,
} from '../helpers/overload.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

// A Redis that holds state runs with maxmemory and noeviction. The gateway alone takes SDK batches
// until it refuses; then the engine runs every role on the same Redis and data directory. Before,
// a full Redis refused the XADD (the gateway spilled, then answered 503 unavailable) and then the
// lease round's ZADD, the group creation and the replay: nothing applied, ever. Now the gateway
// holds writes back in its journal past the high watermark, refuses `503 overloaded` once the
// journal is full too (draining this backlog would make room for more than it holds), and the
// workers drain Redis and the journal by themselves.
const MAXMEMORY = '16mb';
const SPILL_MAX_BYTES = 1024 * 1024;
const SENDERS = 4;
/**
 * The bound this test holds the engine to: every accepted event applied and recorded within 3
 * minutes of every role starting. It takes 25 to 45 s alone, and more while the suite runs three
 * files at once on two cores.
 */
const DRAIN_MS = 180_000;
/** How long the live-state test waits for the workers to settle: a bound against hanging, not a claim. */
const SETTLE_MS = 120_000;

t.test('Redis at its memory limit: refusals say overloaded, opt-out works, and every 202 is applied and recorded once', async (t) => {
  const redis = await PrivateRedis.start({ maxmemory: MAXMEMORY });
  t.teardown(() => redis.stop());
  const d = await deployment(t, { env: { REDIS_URL: redis.url, SPILL_MAX_BYTES: String(SPILL_MAX_BYTES) } });
  const { sdk_key: sdk, rest_key: rest } = d.project;
  const gateway = await d.start(['gateway']);

  // Until the gateway has refused a few batches.
  const ledger = new Ledger();
  const started = Date.now();
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (ledger.overloaded.length < 3 && ledger.other.length === 0 && Date.now() - started < 60_000) await ledger.sendBatch(gateway.url, sdk);
    }),
  );
  t.comment(`${ledger.accepted.size} events accepted by the gateway alone in ${Date.now() - started} ms, then ${ledger.overloaded.length} batches refused`);
  t.same(ledger.other, [], 'every answer was 202 or 503 overloaded');
  t.ok(ledger.overloaded.length >= 3, 'the gateway refused once Redis and its journal were full');
  t.ok(ledger.overloaded.every((r) => r.retryAfter !== null && Number(r.retryAfter) >= 1), 'every refusal carries Retry-After');
  t.match(ledger.overloaded[0]?.message, /Redis holds .* of its .* limit .*spill journal is full/, 'and says why');
  t.ok(readdirSync(join(d.env['DATA_DIR'] ?? '', 'spill')).some((f) => f.endsWith('.journal')), 'writes past the watermark were kept in the journal');

  const ready = await fetch(`${gateway.url}/readyz`);
  const readyBody = (await ready.json()) as { errors: { code: string }[] };
  t.equal(ready.status, 503, '/readyz answers 503 while the gateway refuses');
  t.equal(readyBody.errors[0]?.code, 'overloaded', 'naming the reason');
  const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
  t.equal(metric(metrics, 'svc_admission_shedding'), 1, 'the metrics show writes held back');
  t.ok((metric(metrics, 'svc_refused_writes_total{reason="overloaded"}') ?? 0) >= 3, 'and the refusals by reason');
  t.equal(metric(metrics, 'svc_redis_memory_limit_bytes'), 16 * 1024 * 1024, 'and the memory limit read from Redis');
  t.comment(`Redis used ${metric(metrics, 'svc_redis_memory_used_bytes')} bytes`);

  // Consent is never lost to overload.
  const optOut = await fetch(`${gateway.url}/api/sdk/opt-out`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json' },
    body: JSON.stringify({ external_id: 'u0', subscription_type: 'EMAIL' }),
  });
  t.equal(optOut.status, 200, 'an opt-out sent while the gateway refuses is answered 200');

  // Every role on the same Redis and data directory: the journal is adopted and replayed.
  t.equal(await gateway.stop(), 0, 'the gateway alone stops cleanly');
  const engine = await d.start(['gateway', 'apply', 'recorder']);
  const recovery = Date.now();
  const accepted = Array.from({ length: USERS }, (_, u) => ledger.acceptedOf(u));
  const recordedAll = (): Promise<number[][]> => Promise.all(accepted.map((_, u) => recordedOf(engine.url, rest, u)));
  const lists = await eventually(
    'every accepted event recorded',
    async () => {
      const lists = await recordedAll();
      return lists.every((seqs, u) => seqs.length >= (accepted[u]?.length ?? 0)) ? lists : undefined;
    },
    DRAIN_MS,
  ).catch(async (err: unknown) => {
    const lists = await recordedAll();
    t.comment(`recorded ${lists.reduce((n, l) => n + l.length, 0)} of ${ledger.accepted.size}; applied ${await appliedCount(redis.url, d.prefix)}`);

    throw err;
  });
  t.comment(`every accepted event recorded ${Date.now() - recovery} ms after every role started`);
  await new Promise((r) => setTimeout(r, 2000));
  const final = await recordedAll();
  t.same(final, lists, 'nothing more recorded later');
  const sum = { lost: 0, doubled: 0, unknown: 0 };
  final.forEach((seqs, u) => {
    const c = compare(accepted[u] ?? [], seqs);
    sum.lost += c.lost;
    sum.doubled += c.doubled;
    sum.unknown += c.unknown;
  });
  t.same(sum, { lost: 0, doubled: 0, unknown: 0 }, 'recorded: each accepted event exactly once, nothing refused');
  t.equal(await appliedCount(redis.url, d.prefix), ledger.accepted.size, 'applied: one idempotency entry per accepted event');

  const user = (await (await fetch(`${engine.url}/api/users/u0`, { headers: { authorization: `Bearer ${rest}` } })).json()) as { consent: Record<string, { opted_out: boolean }> };
  t.equal(user.consent['EMAIL']?.opted_out, true, 'the opt-out is applied');
  await eventually('the gateway ready again', async () => ((await fetch(`${engine.url}/readyz`)).status === 200 ? true : undefined), 10_000);
  t.equal(metric(await (await fetch(`${engine.url}/metrics`)).text(), 'svc_admission_shedding'), 0, 'and no longer holding writes back');
  const peak = Number(/^used_memory_peak:(\d+)/m.exec(await raw(redis.url, 'memory'))?.[1]);
  t.comment(`Redis's memory peaked at ${peak} bytes (maxmemory ${16 * 1024 * 1024})`);
  t.equal(await engine.stop(), 0, 'the engine stops cleanly');
});

// Live state that waiting does not free (plain keys, no TTL) holds Redis past its high watermark.
// Before, the gateway kept answering 202 into its journal, which was replayed only once Redis was
// under the watermark again: accepted writes waited for days. Now the journal takes only what
// draining the workers' backlog makes room for; past it, and once nothing is left to drain,
// buffered writes get 503 overloaded, and what the journal took is applied first once memory is
// freed.
t.test('Redis full of live state: 503 overloaded instead of a 202 nothing will make room for; freed, every 202 is applied once, the journal first', async (t) => {
  const redis = await PrivateRedis.start({ maxmemory: '24mb' });
  t.teardown(() => redis.stop());
  const d = await deployment(t, { env: { REDIS_URL: redis.url } });
  const { sdk_key: sdk, rest_key: rest } = d.project;
  const topology = new Topology(d.prefix, Number(d.env['PARTITIONS']));
  // The test's own group keeps the ingest log whole, to read at the end the order it was applied
  // in; so here draining the backlog frees none of it: that room goes to live state.
  await keepIngestLog(redis.url, topology);
  const gateway = await d.start(['gateway']);
  const ledger = new Ledger();
  const statuses = async (batches: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < batches; i++) out.push(await ledger.sendBatch(gateway.url, sdk));
    return out;
  };
  const metrics = async (): Promise<string> => (await fetch(`${gateway.url}/metrics`)).text();
  const readyz = async (url = gateway.url): Promise<{ status: number; message: string }> => {
    const res = await fetch(`${url}/readyz`);
    const body = (await res.json()) as { errors?: { code: string; message: string }[] };
    return { status: res.status, message: `${body.errors?.[0]?.code ?? ''}: ${body.errors?.[0]?.message ?? ''}` };
  };

  // No worker runs yet: a backlog of accepted writes in Redis.
  t.same(new Set(await statuses(36)), new Set([202]), 'a backlog of 36 batches accepted into Redis');
  // Live state just past the high watermark: the journal takes about what draining the backlog frees.
  const high = ((await redisMemory(redis.url)).maxmemory * 80) / 100;
  const keys = await fillWithLiveState(redis.url, d.prefix, high + 256 * 1024);
  await eventually('writes held back', async () => (metric(await metrics(), 'svc_admission_shedding') === 1 ? true : undefined));
  const inRedis = ledger.accepted.size;
  let status = 202;
  for (let i = 0; i < 200 && status === 202; i++) status = await ledger.sendBatch(gateway.url, sdk);
  const journaled = ledger.accepted.size - inRedis;
  t.ok(journaled > 0, `${journaled} events journaled (202) while draining the backlog makes room for them`);
  t.equal(status, 503, 'then a batch is refused');
  t.match(ledger.overloaded.at(-1)?.message, /draining the workers' backlog .* this gateway's spill journal already holds/, 'the journal holds what draining frees');
  const spill = join(d.env['DATA_DIR'] ?? '', 'spill');
  const journalBytes = (): number => readdirSync(spill).reduce((n, f) => n + (f.endsWith('.journal') ? statSync(join(spill, f)).size : 0), 0);
  t.ok(journalBytes() > 0, 'the journal holds them');

  // The workers drain the backlog, and nothing is left that waiting frees. (Their process serves
  // too: on the embedded ClickHouse, only it can answer GET /api/events.)
  const workers = await d.start(['gateway', 'apply', 'recorder']);
  const ready = await eventually(
    'the gateway saying waiting frees nothing',
    async () => {
      const r = await readyz();
      return r.status === 503 && /the workers have applied and recorded everything/.test(r.message) ? r : undefined;
    },
    SETTLE_MS,
  );
  t.match(ready.message, /^overloaded: Buffered writes are refused: Redis holds [\d.]+ MiB of its 24\.0 MiB limit \(\d+%\) in live state that waiting does not free/, '/readyz answers 503 overloaded, naming the cause');
  const refusedBefore = ledger.overloaded.length;
  t.same(await statuses(3), [503, 503, 503], 'buffered writes get 503, not 202');
  const refusals = ledger.overloaded.slice(refusedBefore);
  t.ok(refusals.every((r) => r.retryAfter === '5'), 'with Retry-After');
  t.ok(refusals.every((r) => /in live state that waiting does not free/.test(r.message)), 'saying why');
  t.ok((metric(await metrics(), 'svc_refused_writes_total{reason="live_state"}') ?? 0) >= 4, 'counted by reason');
  t.ok(journalBytes() > 0, 'what the journal took waits for room');

  // Memory freed: the journal is applied first, then later writes.
  await freeLiveState(redis.url, keys);
  let later = 0;
  await eventually('later writes accepted', async () => ((await ledger.sendBatch(gateway.url, sdk)) === 202 && ++later === 3 ? true : undefined), SETTLE_MS);
  t.same(ledger.other, [], 'every answer was 202 or 503 overloaded');
  const accepted = Array.from({ length: USERS }, (_, u) => ledger.acceptedOf(u));
  const recordedAll = (): Promise<number[][]> => Promise.all(accepted.map((_, u) => recordedOf(workers.url, rest, u)));
  const lists = await eventually('every accepted event recorded', async () => {
    const lists = await recordedAll();
    return lists.every((seqs, u) => seqs.length >= (accepted[u]?.length ?? 0)) ? lists : undefined;
  }, SETTLE_MS);
  const sum = { lost: 0, doubled: 0, unknown: 0 };
  lists.forEach((seqs, u) => {
    const c = compare(accepted[u] ?? [], seqs);
    sum.lost += c.lost;
    sum.doubled += c.doubled;
    sum.unknown += c.unknown;
  });
  t.same(sum, { lost: 0, doubled: 0, unknown: 0 }, 'recorded: each accepted event exactly once, nothing refused');
  const order = await ingestOrder(redis.url, topology);
  t.same(
    accepted.map((_, u) => order.get(`u${u}`) ?? []),
    accepted,
    'applied in the order accepted: the backlog, then the journal, then later writes, each once',
  );
  await eventually('the gateway no longer refusing', async () => (/^overloaded/.test((await readyz()).message) ? undefined : true));
  t.equal(metric(await metrics(), 'svc_admission_shedding'), 0, 'and no longer holding writes back');
  t.equal((await readyz(workers.url)).status, 200, 'the gateway with the workers is ready');
});

/** INFO `section` of the Redis at `url`. */
async function raw(url: string, section: string): Promise<string> {
  const client = new Redis(url, { maxRetriesPerRequest: 2 });
  try {
    return await client.info(section);
  } finally {
    client.disconnect();
  }
}
