import t from 'tap';
import { RecorderSink } from '../../actors/recorder/sink.ts';
import { createLogger, type Logger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { outcome } from './outcomes.ts';

/**
 * The recorder publishes each insert of delivery records on the live channel (GET
 * /api/deliveries/live): once per insert, the rows as they went to ClickHouse, and a failed
 * publish never fails the insert.
 */

const entry = (id: string, d: string): RawStreamEntry => ({ id, fields: [Buffer.from('d'), Buffer.from(d)] });

t.test('one message per insert: the inserted rows, each with its stream ID', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), createLogger('error'));
  const listener = gw.redis.duplicate();
  t.teardown(() => listener.disconnect());
  const messages: string[] = [];
  listener.on('message', (_channel: string, message: string) => messages.push(message));
  await listener.subscribe(gw.topology.liveDeliveries());

  const written = [outcome(project, 1), outcome(project, 2, { status: 'failed', error_code: 'timeout', hint: 'a "quoted"\nhint' })];
  await sink.record('outcomes', written.map((o, i) => entry(`7-${i}`, JSON.stringify(o))), 'live|7-0|7-1');
  // A batch ClickHouse refuses is inserted again without its invalid entries: only those rows go out.
  await sink.record('outcomes', [entry('8-0', JSON.stringify(outcome(project, 3))), entry('8-1', 'not json')], 'live|8-0|8-1');
  await eventually('both messages', async () => (messages.length >= 2 ? true : undefined));
  const parsed = messages.map((m) => m.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));
  t.same(parsed[0], written.map((o, i) => ({ stream_id: `7-${i}`, ...o })), 'the first insert, as written');
  t.same(parsed[1], [{ stream_id: '8-0', ...outcome(project, 3) }], 'the second, its valid entry only');
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(messages.length, 2, 'one message per insert');
});

t.test('a publish that fails is logged at warn; the insert stands', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  // A client that is not connected and queues nothing: each of its commands fails at once.
  const down = createRedis(gw.config, { offlineQueue: false });
  down.disconnect();
  const warnings: string[] = [];
  const base = createLogger('error');
  const log: Logger = { ...base, warn: (msg) => warnings.push(msg) };
  const sink = new RecorderSink(gw.clickhouse, down, gw.topology, new Metrics(), log);
  await sink.record('outcomes', [entry('9-0', JSON.stringify(outcome(project, 9)))], 'live|9-0|9-0');
  const stored = await rows<{ id: string }>(gw.clickhouse, 'SELECT id FROM message_deliveries WHERE project = {p:String}', { p: project });
  t.same(stored, [{ id: 'd9' }], 'recorded');
  await eventually('the warning', async () => (warnings.length > 0 ? true : undefined));
  t.same(warnings, ['live delivery records not published']);
});
