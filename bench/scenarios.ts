/**
 * The scenarios `make bench` runs, in order, and the runs each is made of. A run is one script of
 * bench/ as a child process; `report` names the report file it leaves in bench/reports
 * (`<report>.json`, overwritten by each run), which is how the harness finds it.
 */
export interface Run {
  /** Shown in progress lines, e.g. `broadcast to 1 000 000 users`. */
  title: string;
  script: string;
  args: string[];
  report: string;
  /** Whether the script takes `--out FILE` for its report (otherwise it names the file itself). */
  takesOut: boolean;
}

export interface Scenario {
  name: string;
  /** What it measures, one line, for `npm run bench -- --list`. */
  about: string;
  runs: Run[];
}

export const scenarios: Scenario[] = [
  {
    name: 'sdk-ingest',
    about: 'the SDK write mix over HTTP, batches and WebSocket; bare uWS, redis-benchmark XADD and Fastify + BullMQ in the same run',
    runs: [{ title: 'SDK ingest mix', script: 'sdk-ingest.ts', args: [], report: 'sdk-ingest', takesOut: false }],
  },
  {
    name: 'release-writes',
    about: 'SDK identify with tags and the SDK mix, autocannon 100 connections, every role in one process: this tree beside the release of releases.json (built in a worktree of its own), writes/s, CPU and Redis commands per write, accept to recorded',
    runs: [{ title: 'SDK writes against the last release', script: 'release-writes.ts', args: [], report: 'release-writes', takesOut: false }],
  },
  {
    name: 'gateway',
    about: 'the gateway alone (no apply, no recorder) against bare uWebSockets.js',
    runs: [{ title: 'gateway alone', script: 'ingest.ts', args: [], report: 'ingest', takesOut: false }],
  },
  {
    name: 'apply-lag',
    about: 'time from a 202 to the write visible in GET /api/users/{id}, at 50% and 90% of the ingest maximum, against the baseline',
    runs: [{ title: 'apply lag', script: 'apply-lag.ts', args: [], report: 'apply-lag', takesOut: false }],
  },
  {
    name: 'write-cost',
    about: 'CPU µs, Redis commands and apply lag per SDK write, accept to recorded, at 5 000 and 10 000 writes/s (the lag goal is read at 5 000); the closed-loop maximum with wrk, one process and split, and with autocannon, one process (the goal: 10 000 writes/s carried at 100 µs or less)',
    runs: [{ title: 'write cost', script: 'write-cost.ts', args: [], report: 'write-cost', takesOut: false }],
  },
  {
    name: 'broadcast',
    about:
      'a push broadcast to 200 000 and to 1 000 000 users, accept to last record in ClickHouse, against a bare node:http2 loop; and to 30 000 iOS users against a minimal HTTP/2 peer, in one process on one Redis and with dispatch over 2 processes on a 3-node Redis Cluster: pushes/s and CPU per push of every process',
    runs: [
      { title: 'broadcast to 200 000 users', script: 'broadcast.ts', args: ['--users', '200000', '--ceiling-count', '100000'], report: 'broadcast-200k', takesOut: true },
      {
        title: 'broadcast to 1 000 000 users, dispatch in its own process, then on the last release',
        script: 'broadcast.ts',
        args: ['--users', '1000000', '--dispatch-processes', '1', '--ceiling-count', '100000', '--against-release'],
        report: 'broadcast-1m',
        takesOut: true,
      },
      {
        title: 'broadcast to 30 000 iOS users against a minimal HTTP/2 peer, then on the last release',
        script: 'broadcast.ts',
        args: ['--users', '30000', '--types', 'ios', '--peer', 'minimal', '--against-release'],
        report: 'broadcast-h2peer',
        takesOut: true,
      },
      {
        title: 'broadcast to 30 000 iOS users against a minimal HTTP/2 peer, dispatch over 2 processes, 3-node Redis Cluster',
        script: 'broadcast.ts',
        // --cluster: a throwaway cluster of the run's own (bench/redis-cluster.ts).
        args: ['--users', '30000', '--types', 'ios', '--peer', 'minimal', '--dispatch-processes', '2', '--cluster', '3'],
        report: 'broadcast-h2peer-scaleout',
        takesOut: true,
      },
    ],
  },
  {
    name: 'recorder',
    about: 'outcomes moved from Redis into ClickHouse: rows/s and CPU per row of the recorder and of ClickHouse, against a bare INSERT',
    runs: [{ title: 'recorder', script: 'recorder.ts', args: [], report: 'recorder', takesOut: false }],
  },
  {
    name: 'webhooks',
    about: 'events from delivery outcomes to a fast local receiver, signed, many notifications and one: events/s and CPU per event against a bare signing and POST loop',
    runs: [{ title: 'webhooks', script: 'webhooks.ts', args: [], report: 'webhooks', takesOut: false }],
  },
  {
    name: 'queries',
    about: "the dashboard's queries over 20 000 000 delivery rows, p50 and p95",
    runs: [{ title: 'dashboard queries', script: 'deliveries-query.ts', args: [], report: 'deliveries-query', takesOut: false }],
  },
  {
    name: 'dashboard',
    about: 'the dashboard in headless Chromium over 20 000 000 delivery rows: first paint and each filter change, against the bare GET',
    runs: [{ title: 'dashboard in Chromium', script: 'dashboard.ts', args: [], report: 'dashboard', takesOut: false }],
  },
  {
    name: 'soak',
    about: 'ten minutes of mixed load with a broadcast every minute: memory, stream lengths and spill journal growth',
    runs: [{ title: 'soak', script: 'soak.ts', args: [], report: 'soak', takesOut: false }],
  },
  {
    name: 'memory',
    about: 'Redis memory per user, extra tag, extra subscription, idempotent event, queued webhook event and recipient in flight, once applied and recorded, against 0.11.1 in the same run',
    runs: [{ title: 'Redis memory per unit of state', script: 'memory.ts', args: [], report: 'memory', takesOut: false }],
  },
];
