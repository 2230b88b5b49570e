/**
 * Dashboard benchmark: how long the delivery dashboard (/dashboard) takes in headless Chromium
 * over a large message_deliveries table, from the user's action to the table painting its answer,
 * next to the bare GET /api/deliveries round trip from Node for the same request, measured in the
 * same run right after each browser run. Run with `npm run bench -- dashboard` or
 * `node --import tsx bench/dashboard.ts`.
 *
 * It creates a project with Keystore.createProject under a key prefix of its own, fills an
 * embedded ClickHouse with ROWS synthetic records whose big project (94% of them) is that project
 * (bench/deliveries-table.ts), closes it, starts `engine start --roles gateway` on the same
 * DATA_DIR (the gateway reads ClickHouse in its own process), and drives Debian's chromium through
 * playwright-core with the REST key put in session storage before the page's scripts run
 * (bench/dashboard-probe.ts takes the times inside the page). WARMUP runs, then RUNS measured runs
 * of each measure, with another value on each run where a query cache could answer a repeat:
 * - first paint: navigation start to the frame that paints the first rows of the unfiltered table,
 *   each run in a fresh browser context (nothing cached);
 * - each filter change from a loaded table whose charts are drawn: the action's event (the select's
 *   change, Enter, the click) to the frame that paints the new rows (the status line went through
 *   "Loading…" to "N shown").
 * The charts load after the table (3 group_by calls, then one call per series); when their last
 * canvas was drawn is reported apart, as are the browser's timings of each request.
 *
 * Environment: ROWS (default 20000000), RUNS (default 10), WARMUP (default 2), BENCH_DATA_DIR (a
 * directory to keep the filled table in and reuse when it holds ROWS records of an earlier run of
 * this bench; default a temporary one), REDIS_URL, CHROMIUM_PATH (default /usr/bin/chromium).
 * Writes bench/reports/dashboard.json.
 *
 * Does not measure: a browser on another machine (no network latency, the browser shares the 2
 * cores), the recorder inserting meanwhile, several operators at once, a ClickHouse server.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { openClickHouse } from '../engine/infra/clickhouse/client.ts';
import { migrate } from '../engine/infra/clickhouse/migrations.ts';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Keystore } from '../engine/state/keys/keystore.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { arm, probeScript, settled, tableShown, type RequestTiming } from './dashboard-probe.ts';
import { summarize, type Run, type Step } from './dashboard-results.ts';
import { bigProject, count, DAY, fill, settle } from './deliveries-table.ts';
import { engineBuild, startEngine } from './deployment.ts';
import { root } from './paths.ts';
import { REDIS_URL } from './redis.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { positive } from './settings.ts';
import { round } from './table.ts';

const START = Date.UTC(2026, 9, 23);
const settings = { rows: positive('ROWS', 20_000_000), runs: positive('RUNS', 10), warmup: positive('WARMUP', 2) };
const total = settings.runs + settings.warmup;
const prefix = `benchdash${Date.now().toString(36)}:`;
const config = loadConfig({ ...process.env, REDIS_URL, KEY_PREFIX: prefix });
const keep = process.env['BENCH_DATA_DIR'];
const dataDir = keep ?? mkdtempSync(join(tmpdir(), 'bench-dashboard-'));
const teardown = new Teardown();
if (keep === undefined) teardown.folder(dataDir);
teardown.keys(prefix);

/** Every error code the fill writes, one per run (more runs start over). */
const CODES = ['apns_410_Unregistered', 'fcm_404_UNREGISTERED', 'timeout', 'opted_out', 'webpush_410', 'twilio_21610', 'sendgrid_400', 'connection_error', 'apns_403_InvalidProviderToken', 'fcm_429_QUOTA_EXCEEDED', 'no_subscription', 'canceled'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const minute = (ms: number): string => new Date(ms).toISOString().slice(0, 16);

/** The processes using the most CPU now (`ps`), to tell what else shared the machine. */
function busiest(): string[] {
  const lines = execFileSync('ps', ['-eo', 'pcpu,etime,args', '--sort=-pcpu'], { encoding: 'utf8' }).split('\n');
  return lines.slice(1, 7).map((line) => line.trim().slice(0, 140));
}

/**
 * The project and REST key the bench reads with. A kept directory holds the records of a project
 * an earlier run created (its Redis keys are gone): it is created again under the same id.
 */
async function projectFor(redis: RedisClient, topology: Topology, existing: string | null): Promise<{ id: string; key: string; reused: boolean }> {
  const reused = existing !== null && UUID.test(existing);
  const created = await new Keystore(redis, topology).createProject('bench-dashboard', false, reused ? existing : undefined);
  return { id: created.project_id, key: created.rest_key, reused };
}

/** The bare round trip of the page's own request from Node, with what it answered. */
async function bareGet(base: string, key: string, path: string): Promise<{ ms: number; ids: string[] }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { deliveries?: { id: string }[] };
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}`);
  return { ms, ids: (body.deliveries ?? []).map((d) => d.id) };
}

/** One run's figures from the page's probe after it settled, checked against the bare GET. */
async function runOf(i: number, base: string, key: string, page: Page, from: number): Promise<Run> {
  const shown = await tableShown(page);
  const { requests, probe } = await settled(page);
  const painted = shown.table?.painted ?? null;
  if (painted === null || shown.table === null) throw new Error('the table was not painted');
  const table = requests.find((r) => r.path.startsWith('/api/deliveries?'));
  if (table === undefined) throw new Error('the page made no GET /api/deliveries');
  const stats = requests.filter((r) => r.path.startsWith('/api/deliveries/stats'));
  const bare = await bareGet(base, key, table.path);
  if (bare.ids.length !== shown.table.rows || (bare.ids[0] ?? null) !== shown.table.first) {
    throw new Error(`${table.path}: the page shows ${shown.table.rows} rows from ${shown.table.first}, the API answers ${bare.ids.length} from ${bare.ids[0]}`);
  }
  const timing = (r: RequestTiming) => ({ path: r.path, after_action_ms: round(r.start - from, 1), stalled_ms: round(r.stalled, 1), waiting_ms: round(r.waiting, 1), total_ms: round(r.end - r.start, 1) });
  return {
    run: i,
    warmup: i < settings.warmup,
    table_ms: round(painted - from, 1),
    charts_ms: probe.lastCanvas !== null && probe.lastCanvas > from ? round(probe.lastCanvas - from, 1) : null,
    canvases: probe.canvases,
    rows: shown.table.rows,
    bare_ms: round(bare.ms, 1),
    table_request: timing(table),
    stats_requests: stats.length,
    slowest_stats: stats.length === 0 ? null : timing(stats.reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a))),
    stats_done_ms: stats.length === 0 ? null : round(Math.max(...stats.map((r) => r.end)) - from, 1),
    load_average: loadavg()[0] ?? 0,
  };
}

/** Opens the table at `fragment` and waits until it and its charts have loaded. */
async function opened(pageOf: () => Promise<Page>, base: string, fragment: string): Promise<Page> {
  const page = await pageOf();
  await page.goto(`${base}/dashboard#/deliveries${fragment}`);
  await tableShown(page);
  await settled(page);
  return page;
}

/** The filled table, and the project the bench reads it as. */
interface Table {
  project: { id: string; key: string; reused: boolean };
  /** null when a kept table was reused. */
  fillMs: number | null;
  settleMs: number;
  bigRows: number;
  /** Notifications of the project's last 20 days, one for each run of the notification_id step. */
  notifications: string[];
}

/** Fills the embedded ClickHouse (or reuses a kept table) and closes it: the engine opens it next. */
async function fillTable(redis: RedisClient): Promise<Table> {
  const topology = new Topology(prefix, config.PARTITIONS);
  const ch = await openClickHouse({ DATA_DIR: dataDir, CLICKHOUSE_SANDBOX: 'auto' });
  try {
    await migrate(ch);
    const project = await projectFor(redis, topology, await bigProject(ch, settings.rows));
    log(`${project.reused ? 'reusing' : 'filling'} ${settings.rows} rows under ${dataDir}, project ${project.id} ...`);
    const fillMs = await fill(ch, { rows: settings.rows, big: project.id, start: START }, log);
    const settleMs = await settle(ch, log);
    const bigRows = await count(ch, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: project.id });
    const notifications = await ch
      .query({
        query: 'SELECT DISTINCT notification_id FROM message_deliveries WHERE project = {p:String} AND at >= fromUnixTimestamp64Milli({at:Int64}) LIMIT {n:UInt32}',
        query_params: { p: project.id, at: START + 10 * DAY, n: total },
        format: 'JSONEachRow',
      })
      .then((r) => r.json<{ notification_id: string }>())
      .then((rows) => rows.map((r) => r.notification_id));
    log(`${fillMs === null ? 'reused the table' : `filled in ${Math.round(fillMs / 1000)} s`}; waited ${Math.round(settleMs / 1000)} s for mutations; ${bigRows} rows in the project`);
    return { project, fillMs, settleMs, bigRows, notifications };
  } finally {
    // One process per data directory: the engine opens it next.
    await ch.close();
  }
}

/** The filter changes measured, each from a loaded table, with another value on each run where a query cache could answer a repeat. */
function filterSteps(notifications: string[]): Step[] {
  const user = (i: number): string => `user-${(123_457 + i * 7_919) % 1_000_000}`;
  const since = (i: number): number => START + 29 * DAY + i * 60_000;
  const typed = (name: string, value: (i: number) => string) => (p: Page, i: number) => p.fill(`input[name=${name}]`, value(i)).then(() => p.press(`input[name=${name}]`, 'Enter'));
  return [
    { name: 'status', description: 'status=failed chosen on the unfiltered table', from: () => '', event: 'change', act: (p) => p.selectOption('select[name=status]', 'failed') },
    { name: 'channel', description: 'channel=PUSH added to status=failed', from: () => '?status=failed', event: 'change', act: (p) => p.selectOption('select[name=channel]', 'PUSH') },
    { name: 'error_code', description: 'an error code typed, Enter (another of the 12 codes each run, 0.1% to 2% of records)', from: () => '', event: 'keydown', act: typed('error_code', (i) => CODES[i % CODES.length] ?? '') },
    { name: 'external_id', description: 'one user typed, Enter (about 19 records in 30 days; another user each run)', from: () => '', event: 'keydown', act: typed('external_id', user) },
    { name: 'notification_id', description: 'one notification typed, Enter (about 940 records; another each run)', from: () => '', event: 'keydown', act: typed('notification_id', (i) => notifications[i % notifications.length] ?? '') },
    { name: 'since', description: 'From set to the start of the last day (another minute each run)', from: () => '', event: 'change', act: (p, i) => p.fill('input[name=since]', minute(since(i))) },
    { name: 'until', description: 'Until added a day after From: the last day', from: (i) => `?since=${encodeURIComponent(new Date(since(i)).toISOString())}`, event: 'change', act: (p, i) => p.fill('input[name=until]', minute(since(i) + DAY)) },
    { name: 'older', description: '"Older →" on the unfiltered table, one page further each run', from: () => '', event: 'click', act: (p) => p.click('.pager button:has-text("Older")'), chained: true },
  ];
}

type Measured = { name: string; description: string; runs: Run[] };

/** First paint: each run in a fresh browser context, nothing cached. */
async function firstPaint(newContext: () => Promise<BrowserContext>, base: string, key: string): Promise<Measured> {
  const runs: Run[] = [];
  for (let i = 0; i < total; i++) {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${base}/dashboard#/deliveries`, { waitUntil: 'commit' });
    runs.push(await runOf(i, base, key, page, 0));
    await context.close();
    log(`  first paint run ${i + 1}/${total}: ${runs.at(-1)?.table_ms} ms, charts ${runs.at(-1)?.charts_ms} ms`);
  }
  return { name: 'first paint', description: 'navigation start to the first rows of the unfiltered table painted, in a fresh browser context', runs };
}

/** One filter change, from the action's event to the new rows painted; a fresh page per run unless the step is chained. */
async function filterChange(context: BrowserContext, step: Step, base: string, key: string): Promise<Measured> {
  const runs: Run[] = [];
  let page: Page | null = null;
  for (let i = 0; i < total; i++) {
    if (page === null || step.chained !== true) {
      await page?.close();
      page = await opened(() => context.newPage(), base, step.from(i));
    }
    await arm(page, step.event);
    await step.act(page, i);
    const action = (await tableShown(page)).action;
    if (action === null) throw new Error(`${step.name}: the ${step.event} event was not seen`);
    runs.push(await runOf(i, base, key, page, action));
  }
  await page?.close();
  const kept = runs.filter((r) => !r.warmup).map((r) => r.table_ms);
  log(`  ${step.name}: ${kept.join(', ')} ms`);
  return { name: step.name, description: step.description, runs };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadStart = loadavg()[0] ?? 0;
  const busiestStart = busiest();
  const redis = teardown.connection(createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS }));
  const table = await fillTable(redis);
  // A build older than the dashboard would answer /dashboard with 404: run the sources then.
  if (!existsSync(join(root, 'dist/gateway/routes/dashboard.js'))) process.env['ENGINE_FROM_SOURCE'] = '1';
  const build = await engineBuild();
  const engine = await startEngine({ prefix, dataDir, redisUrl: REDIS_URL, roles: ['gateway'] });
  teardown.child(engine.child);
  const browser: Browser = await chromium.launch({ executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  teardown.add('closing the browser', () => browser.close());
  const newContext = async (): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, timezoneId: 'UTC' });
    await context.addInitScript({ content: probeScript(table.project.key) });
    return context;
  };
  const measured = [await firstPaint(newContext, engine.base, table.project.key)];
  const context = await newContext();
  for (const step of filterSteps(table.notifications)) measured.push(await filterChange(context, step, engine.base, table.project.key));
  await context.close();

  const busiestEnd = busiest();
  const { results, summary, table: lines } = summarize(measured, settings.rows);
  for (const line of lines) console.log(line);
  const report = {
    benchmark: 'dashboard',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version, chromium: browser.version(), load_average_start: loadStart, load_average_end: loadavg()[0] ?? 0, busiest_at_start: busiestStart, busiest_before_report: busiestEnd },
    engine: build,
    settings: { ...settings, goal_ms: 1000 },
    summary,
    data: { rows: settings.rows, project_rows: table.bigRows, reused: table.fillMs === null, fill_ms: table.fillMs === null ? null : Math.round(table.fillMs), mutations_wait_ms: Math.round(table.settleMs) },
    results,
    notes: NOTES,
  };
  log(`report: ${await writeReport(report)}`);
}

const NOTES = [
  'Measures: headless Chromium (Debian, playwright-core) on the machine running the engine (`engine start --roles gateway`, embedded ClickHouse in that process); times are taken inside the page in its own clock (bench/dashboard-probe.ts), from the action event (or navigation start) to the animation frame after the rows entered the DOM.',
  'Ceiling: the page’s own GET /api/deliveries request (same URL, filters and cursor) from Node right after each browser run, answer read and parsed: the HTTP and query share without the browser and without the charts’ requests running at the same time. Run second, it may be helped by the query condition cache; its rows are checked equal to those on screen.',
  'Filter changes start from a page whose table and charts have loaded (fresh page per run, the browser cache warm); paging clicks "Older →" once per run on one page. The charts of a filter change load after the table (group_by status, channel, error_code, then one group_by=hour call per series, up to 16 calls); `charts_ms` is their last canvas.',
  'Values change per run where a query cache could answer a repeat (error code, user, notification, since/until minute, page); status and channel repeat.',
  `Machine: ${cpus().length} cores shared by ClickHouse, the gateway, Chromium, this process and other work on the host (load average per run in results).`,
];

await runBench(main, () => teardown.run());
