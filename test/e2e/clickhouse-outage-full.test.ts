import t from 'tap';
import { startClickHouseStandIn } from '../clickhouse-server/stand-in.ts';
import { deployment } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import { appliedCount, compare, Ledger, metric, recordedOf, USERS } from '../helpers/overload.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { TcpSwitch } from '../helpers/tcp-switch.ts';

// ClickHouse unreachable for a while under load, with a small maxmemory: the recorder cannot
// insert, so the changes stream grows until Redis passes its watermark. Before, Redis filled up and
// everything stopped for good; now the gateway holds writes back in its journal (refusing
// `overloaded` once that is full too), opt-out still works, and once ClickHouse is back everything
// accepted is recorded once and the journal replays, with no one stepping in.
const MAXMEMORY = '16mb';
const SPILL_MAX_BYTES = 2 * 1024 * 1024;
/** Events a second the test sends (batches of 500). */
const RATE = 3000;
const OUTAGE_MS = 15_000;
/** The bound this test holds the engine to: every accepted event recorded within it of ClickHouse's return. */
const DRAIN_MS = 60_000;

t.test('ClickHouse down under load with a small maxmemory: no wedge, nothing lost, recovery on its own', async (t) => {
  const redis = await PrivateRedis.start({ maxmemory: MAXMEMORY });
  t.teardown(() => redis.stop());
  const clickhouse = await startClickHouseStandIn();
  const link = await TcpSwitch.start({ host: '127.0.0.1', port: Number(new URL(clickhouse.url).port) });
  t.teardown(async () => {
    await link.close();
    await clickhouse.close();
  });
  const d = await deployment(t, {
    env: { REDIS_URL: redis.url, CLICKHOUSE_URL: `http://127.0.0.1:${link.port}`, SPILL_MAX_BYTES: String(SPILL_MAX_BYTES) },
  });
  const { sdk_key: sdk, rest_key: rest } = d.project;
  const engine = await d.start(['gateway', 'apply', 'recorder']);

  const ledger = new Ledger();
  let running = true;
  const load = (async () => {
    while (running) {
      const at = Date.now();
      await ledger.sendBatch(engine.url, sdk);
      await new Promise((r) => setTimeout(r, Math.max(0, (500 / RATE) * 1000 - (Date.now() - at))));
    }
  })();
  await new Promise((r) => setTimeout(r, 3000));
  link.switchOff();
  const down = Date.now();
  const shedding = await eventually(
    'the gateway holding writes back',
    async () => (metric(await (await fetch(`${engine.url}/metrics`)).text(), 'svc_admission_shedding') === 1 ? true : undefined),
    OUTAGE_MS,
  ).catch(() => false);
  t.ok(shedding, `Redis passed its high watermark ${Date.now() - down} ms into the outage: writes go to the journal`);
  const optOut = await fetch(`${engine.url}/api/sdk/opt-out`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json' },
    body: JSON.stringify({ external_id: 'u1', subscription_type: 'SMS' }),
  });
  t.equal(optOut.status, 200, 'an opt-out sent meanwhile is answered 200');
  await new Promise((r) => setTimeout(r, Math.max(0, down + OUTAGE_MS - Date.now())));
  const during = { accepted: ledger.accepted.size, overloaded: ledger.overloaded.length };
  link.switchOn();
  const back = Date.now();
  await new Promise((r) => setTimeout(r, 2000));
  running = false;
  await load;
  t.comment(`${ledger.accepted.size} events accepted (${during.accepted} by the end of the outage), ${ledger.overloaded.length} batches refused overloaded (${during.overloaded} during it)`);
  t.same(ledger.other, [], 'every answer was 202 or 503 overloaded');
  t.ok(ledger.overloaded.every((r) => r.retryAfter !== null), 'every refusal carries Retry-After');

  const accepted = Array.from({ length: USERS }, (_, u) => ledger.acceptedOf(u));
  const recordedAll = (): Promise<number[][]> => Promise.all(accepted.map((_, u) => recordedOf(engine.url, rest, u)));
  const lists = await eventually(
    'every accepted event recorded',
    async () => {
      const lists = await recordedAll().catch(() => undefined);
      return lists?.every((seqs, u) => seqs.length >= (accepted[u]?.length ?? 0)) ? lists : undefined;
    },
    DRAIN_MS,
  ).catch(async (err: unknown) => {
    const lists = await recordedAll();
    t.comment(`recorded ${lists.reduce((n, l) => n + l.length, 0)} of ${ledger.accepted.size}; applied ${await appliedCount(redis.url, d.prefix)}`);
    throw err;
  });
  t.comment(`every accepted event recorded ${Date.now() - back} ms after ClickHouse came back`);
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
  const user = (await (await fetch(`${engine.url}/api/users/u1`, { headers: { authorization: `Bearer ${rest}` } })).json()) as { consent: Record<string, { opted_out: boolean }> };
  t.equal(user.consent['SMS']?.opted_out, true, 'the opt-out is applied');
  await eventually('the gateway ready again', async () => ((await fetch(`${engine.url}/readyz`)).status === 200 ? true : undefined), 10_000);
  t.equal(await engine.stop(), 0, 'the engine stops cleanly');
});
