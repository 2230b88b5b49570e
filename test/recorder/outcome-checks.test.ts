import t from 'tap';
import { RecorderSink } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { rows } from '../clickhouse/embedded.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { outcome } from './outcomes.ts';
import { outcomeTexts } from '../../schemas/outcomes.ts';

/** An outcomes stream entry as a buffer read returns it: field `d` with the given text. */
const entry = (id: string, d: string): RawStreamEntry => ({ id, fields: [Buffer.from('d'), Buffer.from(d)] });

t.test('outcome entries ClickHouse refuses are skipped one by one; the valid ones of the batch land once', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), createLogger('error'));
  const valid = (n: number) => JSON.stringify(outcome(project, n));
  const batch: RawStreamEntry[] = [
    entry('1-0', valid(0)),
    entry('1-1', JSON.stringify({ ...outcome(project, 1), status: 'lost' })),
    entry('1-2', 'not json'),
    entry('1-3', ` ${valid(3)}`),
    { id: '1-4', fields: [Buffer.from('x'), Buffer.from(valid(4))] },
    entry('1-5', JSON.stringify(outcome(project, 5), null, 2)),
    entry('1-6', JSON.stringify({ ...outcome(project, 6), extra: 1 })),
    entry('1-7', valid(7)),
  ];
  const recorded = async () =>
    rows<{ id: string; stream_id: string }>(gw.clickhouse, 'SELECT id, stream_id FROM message_deliveries WHERE project = {p:String} ORDER BY id', { p: project });

  await sink.record('outcomes', batch, 'checks|1-0|1-7');
  const expected = [
    { id: 'd0', stream_id: '1-0' },
    { id: 'd3', stream_id: '1-3' },
    { id: 'd5', stream_id: '1-5' },
    { id: 'd7', stream_id: '1-7' },
  ];
  t.same(await recorded(), expected, 'the valid entries, with leading space or spread over lines too, each with its stream ID');

  await sink.record('outcomes', batch, 'checks|1-0|1-7');
  t.same(await recorded(), expected, 'the same batch redelivered under its token adds nothing');
});

t.test('a batch of valid outcomes goes to ClickHouse as its entries wrote it', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), createLogger('error'));
  const written = [
    outcome(project, 1, { status: 'failed', error_code: 'apns_410_Unregistered', hint: 'Retired "token" \\ with\nnewline', provider_message_id: null, retrying: true }),
    outcome(project, 2, { status: 'skipped', error_code: 'no_subscription', subscription_type: null, token_tail: null, latency_ms: null, external_id: 'ünïcødé ✓' }),
  ];
  await sink.record(
    'outcomes',
    written.map((o, i) => entry(`5-${i}`, JSON.stringify(o))),
    'exact|5-0|5-1',
  );
  const stored = await rows<Record<string, unknown>>(
    gw.clickhouse,
    'SELECT * EXCEPT (stream_id, at), toUnixTimestamp64Milli(at) AS at FROM message_deliveries WHERE project = {p:String} ORDER BY id',
    { p: project },
  );
  t.same(
    stored.map((row) => ({ ...row, at: Number(row['at']) })),
    written,
  );
});

t.test('an entry of several outcomes is a row each, under the entry stream ID; a bad one among them is skipped alone', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), createLogger('error'));
  const valid = (n: number) => JSON.stringify(outcome(project, n));
  const recorded = async () =>
    rows<{ id: string; stream_id: string }>(gw.clickhouse, 'SELECT id, stream_id FROM message_deliveries WHERE project = {p:String} ORDER BY id', { p: project });

  await sink.record('outcomes', [entry('7-0', [valid(0), valid(1)].join('\n')), entry('7-1', valid(2)), entry('7-2', [valid(3), valid(4), valid(5)].join('\n'))], 'many|7-0|7-2');
  const expected = [
    { id: 'd0', stream_id: '7-0' },
    { id: 'd1', stream_id: '7-0' },
    { id: 'd2', stream_id: '7-1' },
    { id: 'd3', stream_id: '7-2' },
    { id: 'd4', stream_id: '7-2' },
    { id: 'd5', stream_id: '7-2' },
  ];
  t.same(await recorded(), expected, 'every outcome of every entry, in the fast path');

  await sink.record('outcomes', [entry('8-0', [valid(6), JSON.stringify({ ...outcome(project, 7), status: 'lost' }), valid(8)].join('\n'))], 'many|8-0|8-0');
  t.same((await recorded()).slice(6), [
    { id: 'd6', stream_id: '8-0' },
    { id: 'd8', stream_id: '8-0' },
  ], 'the valid outcomes of an entry with a refused one');
});

t.test('outcomeTexts parts an entry at each line that starts an object, and keeps one written over lines whole', async (t) => {
  t.same(outcomeTexts('{"a":1}'), ['{"a":1}']);
  t.same(outcomeTexts('{"a":1}\n{"b":"x\\ny"}\n{"c":3}'), ['{"a":1}', '{"b":"x\\ny"}', '{"c":3}']);
  const pretty = JSON.stringify({ a: 1, b: { c: 2 } }, null, 2);
  t.same(outcomeTexts(pretty), [pretty], 'one object over several lines');
  t.same(outcomeTexts(`${pretty}\n{"d":4}`), [pretty, '{"d":4}']);
  t.same(outcomeTexts(''), [''], 'an empty value is one (invalid) text');
});
