import t from 'tap';
import { RecorderSink } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { outcomeJson, type OutcomeDraft, type OutcomeEntry } from '../../schemas/outcomes.ts';
import { rows } from '../clickhouse/embedded.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { outcome } from './outcomes.ts';

/** An outcome as the dispatch actor builds it: the token's last characters, no ellipsis. */
function draft(project: string, n: number, tail: string | null, externalId = `u${n}`): OutcomeDraft {
  const full: Partial<OutcomeEntry> = outcome(project, n, { external_id: externalId });
  delete full.token_tail;
  return { ...(full as Omit<OutcomeEntry, 'token_tail'>), tail };
}

t.test('an outcome JSON carries the ellipsis escaped: ASCII for an ASCII token, the same value parsed', async (t) => {
  const json = outcomeJson(draft('p1', 1, 'a9f3'));
  t.match(json, /^[\x20-\x7e]*$/, 'ASCII only');
  t.ok(json.includes('"token_tail":"\\u2026a9f3"'));
  t.same(JSON.parse(json), outcome('p1', 1, { external_id: 'u1' }), 'parsed, it is the outcome the schema describes');
  t.same(JSON.parse(outcomeJson(draft('p1', 2, null))), outcome('p1', 2, { external_id: 'u2', token_tail: null }), 'no subscription: token_tail null');
});

t.test('a value that reads like the tail key is left as it is', async (t) => {
  for (const externalId of ['x"tail":"y', '"tail":', '\\"tail\\":\\"']) {
    const parsed = JSON.parse(outcomeJson(draft('p1', 3, 'b0c4', externalId))) as Record<string, unknown>;
    t.equal(parsed['external_id'], externalId);
    t.equal(parsed['token_tail'], '…b0c4');
    t.notOk('tail' in parsed);
  }
});

t.test('ClickHouse stores the ellipsis the escape stands for', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), createLogger('error'));
  const d = (text: string) => ({ id: '1-0', fields: [Buffer.from('d'), Buffer.from(text)] });
  await sink.record('outcomes', [d(`${outcomeJson(draft(project, 4, 'a9f3'))}\n${outcomeJson(draft(project, 5, null))}`)], 'json|1-0|1-0');
  const stored = await rows<{ id: string; token_tail: string | null }>(gw.clickhouse, 'SELECT id, token_tail FROM message_deliveries WHERE project = {p:String} ORDER BY id', { p: project });
  t.same(stored, [
    { id: 'd4', token_tail: '…a9f3' },
    { id: 'd5', token_tail: null },
  ]);
});
