/**
 * Cluster appends benchmark: what turning auto-pipelining off costs on a Redis Cluster. Appends
 * SDK-sized entries to the ingest streams of PARTITIONS partitions, CONCURRENCY in flight, three
 * ways: the ioredis Cluster client with auto-pipelining (as before), without it (every worker's
 * client now), and the gateway's ordered appends (gateway/ingest/ordered-appends.ts), with
 * `WAIT 1` too when BENCH_WAIT_REPLICAS=1. Run against a cluster:
 * `REDIS_URL=redis://127.0.0.1:7000,redis://127.0.0.1:7001,... node --import tsx bench/cluster-appends.ts`.
 *
 * Environment: BENCH_APPENDS (per way, default 50000), BENCH_CONCURRENCY (default 200),
 * BENCH_WAIT_REPLICAS (default 0). Deletes its keys at the end.
 */
import { Cluster } from 'ioredis';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { OrderedAppends } from '../gateway/ingest/ordered-appends.ts';
import type { IngestEntry } from '../schemas/ingest.ts';
import { positive } from './settings.ts';

const APPENDS = positive('BENCH_APPENDS', 50_000);
const CONCURRENCY = positive('BENCH_CONCURRENCY', 200);
const WAIT_REPLICAS = positive('BENCH_WAIT_REPLICAS', 0, true);
const prefix = `bench${Date.now().toString(36)}:`;
const config = loadConfig({ ...process.env, KEY_PREFIX: prefix });
const topology = new Topology(prefix, config.PARTITIONS);
const nodes = config.REDIS_URL.split(',').map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) }));
if (nodes.length < 2) throw new Error('REDIS_URL must list the nodes of a Redis Cluster');

const entry = (i: number): IngestEntry =>
  ({ op: 'event', project: 'p', external_id: `u${i % 10_000}`, name: 'purchase', properties: { sku: `A-${i % 50}`, amount: 12.5 }, at: Date.now(), w: 'bench', n: i }) as unknown as IngestEntry;

/** Appends per second of one way of appending, CONCURRENCY in flight. */
async function rate(append: (e: IngestEntry) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < APPENDS) await append(entry(next++));
    }),
  );
  return APPENDS / (Number(process.hrtime.bigint() - started) / 1e9);
}

const cluster = (autoPipelining: boolean): Cluster => new Cluster(nodes, { enableAutoPipelining: autoPipelining, redisOptions: { enableAutoPipelining: false } });
const streamOf = (e: IngestEntry): string => topology.ingest(topology.partitionOf(e.project, e.external_id));

const rows: [string, number][] = [];
const piped = cluster(true);
rows.push(['auto-pipelining (before)', await rate((e) => piped.xadd(streamOf(e), '*', 'd', JSON.stringify(e)))]);
const plain = cluster(false);
rows.push(['no auto-pipelining (workers now)', await rate((e) => plain.xadd(streamOf(e), '*', 'd', JSON.stringify(e)))]);
const ordered = new OrderedAppends(plain, topology, WAIT_REPLICAS, 1000);
rows.push([`ordered appends${WAIT_REPLICAS > 0 ? `, WAIT ${WAIT_REPLICAS}` : ''} (gateway now)`, await rate((e) => ordered.appendEntries([e]))]);

for (const [name, perSecond] of rows) console.log(`${name.padEnd(44)} ${Math.round(perSecond).toLocaleString('en-US').padStart(9)} appends/s`);
await Promise.all(Array.from({ length: config.PARTITIONS }, (_, p) => plain.del(topology.ingest(p))));
piped.disconnect();
plain.disconnect();
