/**
 * Broadcast benchmark: how fast one engine process (every role) delivers a push broadcast to N
 * users through the provider simulators (APNs, FCM, Web Push), next to the ceiling measured in
 * the same run: bare clients (bench/apns-ceiling.ts; node:http2 for APNs and FCM, pooled HTTP/1.1
 * with the same encryption for Web Push) sending each type's share of N pushes to its simulator,
 * one type after the other; the ceiling of the mix is N over the sum of their times.
 *
 * `node --import tsx bench/broadcast.ts [--users N] [--types ios,android,web] [--out file] [--audience all|ids]
 *  [--ceiling-count N] [--ceiling-inflight K] [--engine-root DIR] [--cpu-prof DIR]
 *  [--node-flags "FLAGS"] [--dispatch-processes N] [--cluster N] [--peer minimal] [--keep] [--against-release]`
 * (`npm run bench:broadcast -- --users N`).
 *
 * Steps: the provider simulators and the engine (`bin/engine.js start`, the dist/ build when there
 * is one) start as separate processes under a fresh KEY_PREFIX and DATA_DIR; a project is created
 * and the simulators' APNs, FCM and Web Push credentials registered through the `engine` command; N
 * users with one push subscription each, IOS_PUSH, ANDROID_PUSH and WEB_PUSH in rotation over the
 * `--types` (default all three; a Web Push subscription is made by the simulator, which keeps its
 * keys to decrypt), are registered through /api/sdk/batch and the bench waits until they
 * are applied (and, for `--audience all`, mirrored into ClickHouse). Then the ceiling runs, the
 * simulator forgets its provider token (so the engine's newer one is not a 429), and the broadcast
 * is sent and timed from the POST to the moment every delivery record is visible in ClickHouse
 * (GET /api/deliveries/stats); the ceiling runs again after it, and the faster of the two is the
 * one the ratio is over (other work on the host moves both). CPU of the engine, the simulator and Redis is read around both runs
 * (/proc/<pid>/stat, INFO cpu), the engine's RSS every 500 ms. Writes
 * bench/reports/broadcast.json (or --out; bench/report.ts), with its `summary` rows (bench/summary.ts), and
 * prints a table.
 *
 * `--peer minimal` (iOS users only, `--types ios`) sends to bench/h2-peer.ts instead of the APNs
 * simulator: a minimal peer in its own process (cleartext HTTP/2, each distinct token checked once,
 * 200 at once), the project's APNs credentials pointing at it through `base_url`. The ceiling is
 * then a bare node:http2 loop to the same peer (bench/apns-ceiling.ts, one connection, 1 000
 * streams in flight unless --ceiling-connections/--ceiling-inflight say otherwise), and the report
 * sets the engine's pushes/s and CPU per push (engine processes and Redis, accept to recorded)
 * against the loop's, with the CPU per push of every process (the peer's included).
 *
 * `--dispatch-processes N` runs dispatch alone in N more engine processes (`--roles dispatch`);
 * the first one's RSS is then the one sampled (the memory goal is a dispatch process's), and the
 * report gives each one's CPU per push. The engine processes' node runs with the checkout's own
 * flags (package.json `config.node_flags`), then `--node-flags` (for example `--cpu-prof`). With
 * REDIS_URL listing the nodes of a Redis Cluster (comma-separated), every process uses the cluster
 * and Redis's CPU is summed over its nodes.
 * `--cluster N` starts a throwaway N-node Redis Cluster (bench/redis-cluster.ts, no replicas, no
 * persistence) and uses it instead of REDIS_URL; it is stopped and its directory removed at the end.
 * With more than one engine process or Redis node, the summary has a CPU per push row for each
 * process (the main one, each dispatch process, Redis summed over its nodes).
 * `--against-release` then runs the same broadcast (users, types, processes, Redis) on the release
 * of releases.json (bench/release.ts, BENCH_RELEASE overrides), after this tree's deployment
 * stopped; the rows give its figures beside this tree's, and at 1M users the goal is 2.5 times its
 * pushes/s.
 *
 * Its steps, each in a file of its own: broadcast-options.ts (the flags), broadcast-deployment.ts
 * (the processes), broadcast-users.ts (the audience), broadcast-ceiling.ts (the bare clients),
 * broadcast-send.ts (the measured broadcast) and broadcast-report.ts (the report and its table).
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCeiling } from './broadcast-ceiling.ts';
import { startDeployment } from './broadcast-deployment.ts';
import { parseOptions } from './broadcast-options.ts';
import { broadcastReport, printTable, type ReleaseBroadcast } from './broadcast-report.ts';
import { measureBroadcast } from './broadcast-send.ts';
import { registerUsers } from './broadcast-users.ts';
import { buildRelease, releaseNamed } from './release.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';

const options = parseOptions();
const teardown = new Teardown();

/** The release's broadcast under the same options, its deployment stopped and its keys removed after. */
async function measureRelease(): Promise<ReleaseBroadcast> {
  const built = await buildRelease(await releaseNamed());
  const own = new Teardown();
  teardown.add(`stopping ${built.version}'s deployment`, () => own.run());
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-broadcast-release-'));
  own.folder(work);
  const releaseOptions = { ...options, engineRoot: built.root, fromSource: false, cpuProf: undefined };
  log(`bench: the same broadcast on ${built.version} (${built.root})`);
  const deployment = await startDeployment(releaseOptions, work, own);
  await registerUsers(deployment, releaseOptions);
  const { result } = await measureBroadcast(deployment, releaseOptions);
  await own.run();
  return { version: built.version, commit: built.commit, result };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-broadcast-'));
  if (!options.keep) teardown.folder(work);
  // This tree's deployment stops before the release's starts, so neither takes CPU from the other.
  const own = new Teardown();
  teardown.add('stopping the deployment', () => own.run());
  const deployment = await startDeployment(options, work, own);
  const registration = await registerUsers(deployment, options);
  // Other work on the host moves the figures: the ceiling runs before and after the engine's
  // broadcast, and the faster of the two is the one the ratio is over.
  const before = await runCeiling(deployment, options, 'before');
  const { result, deliveriesPerSec } = await measureBroadcast(deployment, options);
  if (!options.peer) await deployment.forget();
  const after = await runCeiling(deployment, options, 'after');
  await own.run();
  const release = options.againstRelease ? await measureRelease() : null;
  const report = broadcastReport(options, { startedAt, registration, before, after, result, deliveriesPerSec, release });
  printTable(report, options);
  const file = await writeReport(report, options.out ? resolve(options.out) : undefined);
  log(`bench: report written to ${file}`);
}

await runBench(main, () => teardown.run());
