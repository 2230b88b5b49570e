import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { OverloadedError } from '../../schemas/errors.ts';
import { loadConfig } from '../../engine/config.ts';
import { createLogger } from '../../engine/log.ts';
import { createRedis } from '../../engine/redis.ts';
import { Topology } from '../../engine/topology.ts';
import type { Admission } from '../../gateway/ingest/pressure.ts';
import { SpillJournal } from '../../gateway/ingest/spill-journal.ts';
import { IngestWriter } from '../../gateway/ingest/writer.ts';
import { eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

// The writer asks admission before each append: held back, writes go to the journal (202) and the
// journal waits; once it is full they are refused `overloaded`; admitted again, the journal replays
// in order and writes go to Redis.
const topology = new Topology('adm:', 2);

/** Admission as a test sets it. */
class Gate implements Admission {
  admits = true;
  appended(): void {}
  room(): number {
    return Infinity;
  }
  describe(): string {
    return 'Redis holds 9 of its 10 MiB limit (test)';
  }
}

function entry(n: number): IngestEntry {
  return { op: 'tags', project: 'p1', external_id: `u${n % 3}`, at: n, tags: { n: `n${n}` } };
}

t.test('held back: journaled, then refused overloaded once the journal is full; admitted: replayed in order', async (t) => {
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  const redis = createRedis(loadConfig({ REDIS_URL: server.url }), { commandTimeout: 500, offlineQueue: false });
  t.teardown(() => redis.disconnect());
  await new Promise((r) => redis.once('ready', r));
  const gate = new Gate();
  const refused: string[] = [];
  const journal = new SpillJournal(mkdtempSync(join(tmpdir(), 'adm-')), 'gw', 2000);
  const writer = new IngestWriter(redis, topology, journal, createLogger('error'), { replayEveryMs: 50, admission: gate, refused: (r) => refused.push(r) });
  await writer.start();
  t.teardown(() => writer.close());

  await writer.write([entry(0)]);
  gate.admits = false;
  const accepted = [0];
  let refusal: unknown;
  for (let n = 1; n < 100 && refusal === undefined; n++) {
    await writer.write([entry(n)]).then(
      () => accepted.push(n),
      (err: unknown) => (refusal = err),
    );
  }
  t.ok(accepted.length > 5, `${accepted.length} writes accepted, the later ones into the journal`);
  t.equal(await redis.xlen(topology.ingest(0)) + (await redis.xlen(topology.ingest(1))), 1, 'only the first reached Redis');
  t.type(refusal, OverloadedError, 'once the journal is full, a write is refused overloaded');
  t.match((refusal as OverloadedError).message, /Redis holds 9 of its 10 MiB limit \(test\), and this gateway's spill journal is full/, 'saying why');
  t.equal((refusal as OverloadedError).retryAfter, 5, 'with Retry-After');
  t.same(refused, ['overloaded'], 'counted by reason');
  t.match(writer.refusing(), /spill journal is full/, '/readyz is told the gateway refuses');
  await new Promise((r) => setTimeout(r, 300));
  t.ok(writer.isSpilling, 'the journal waits while Redis is past its watermark');

  gate.admits = true;
  await eventually('the journal replayed', async () => (writer.isSpilling ? undefined : true));
  const inRedis: number[] = [];
  for (let p = 0; p < topology.partitions; p++) {
    for (const [, fields] of await redis.xrange(topology.ingest(p), '-', '+')) inRedis.push((JSON.parse(fields[1] ?? '{}') as IngestEntry).at);
  }
  t.same(inRedis.sort((a, b) => a - b), accepted, 'every accepted write is in Redis once');
  t.equal(writer.refusing(), null, 'and the gateway no longer refuses');
});
