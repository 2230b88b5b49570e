import t from 'tap';
import { call } from '../helpers/http.ts';
import { sqlCall, sqlEngine } from './engine.ts';

/** A scan that never ends on its own: the whole of system.numbers. */
const SCAN = 'SELECT count() FROM system.numbers WHERE intHash64(number) % 1000003 = 17';

t.test("a long scan is stopped by the engine's timeout while SDK writes and the recorder carry on", async (t) => {
  // Rows to read without bound, so that the time limit is what stops the scan, on any machine.
  const s = await sqlEngine(t, { SQL_MAX_CONCURRENT_QUERIES: '1', SQL_MAX_ROWS_TO_READ: '1000000000000000' });
  const key = { 'X-ClickHouse-Key': s.operatorKey };
  const project = s.d.project.project_id;

  const started = Date.now();
  const scan = sqlCall(s.sqlUrl, { query: SCAN, max_execution_time: '4' }, { headers: key });
  // The scan holds the one query slot; the next query is told so at once.
  let busy = await sqlCall(s.sqlUrl, { query: 'SELECT 1' }, { headers: key });
  for (let i = 0; i < 20 && busy.status === 200; i++) busy = await sqlCall(s.sqlUrl, { query: 'SELECT 1' }, { headers: key });

  const writes: number[] = [];
  let seenAt: number | undefined;
  const batch = Array.from({ length: 20 }, (_, i) => s.outcome(i, { notification_id: 'during-scan' }));
  await s.addOutcomes(batch);
  let scanDone = false;
  void scan.finally(() => (scanDone = true));
  while (!scanDone || seenAt === undefined) {
    const sent = Date.now();
    const write = await call(`${s.engine.url}/api/sdk/events`, 'POST', s.d.project.sdk_key, { external_id: 'u1', name: 'tick' });
    t.equal(write.status, 202, 'an SDK write is answered while the scan runs');
    if (!scanDone) writes.push(Date.now() - sent);
    if (seenAt === undefined) {
      const listed = await call(`${s.engine.url}/api/deliveries?notification_id=during-scan&limit=100`, 'GET', s.d.project.rest_key);
      if ((listed.body as { deliveries?: unknown[] }).deliveries?.length === batch.length) seenAt = Date.now() - started;
    }
    if (Date.now() - started > 60_000) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const answer = await scan;
  const scanMs = Date.now() - started;

  t.equal(busy.status, 503, 'a query past the cap is refused');
  t.equal(busy.headers.get('x-clickhouse-exception-code'), '202', "with ClickHouse's 'too many simultaneous queries'");
  t.match(busy.text, /TOO_MANY_SIMULTANEOUS_QUERIES/);
  t.equal(answer.headers.get('x-clickhouse-exception-code'), '159', "the scan is stopped with ClickHouse's timeout error");
  t.match(answer.text, /Timeout exceeded.*\(TIMEOUT_EXCEEDED\)/);
  t.ok(writes.length > 0, 'SDK writes were sent while the scan ran');
  t.ok(seenAt !== undefined, 'the outcomes appended during the scan were recorded');
  t.comment(`scan answered after ${scanMs} ms (max_execution_time 4 s)`);
  t.comment(`${writes.length} SDK writes answered during the scan: median ${median(writes)} ms, slowest ${Math.max(...writes)} ms`);
  t.comment(`the recorder's rows, appended as the scan started, readable after ${seenAt ?? 'never'} ms`);

  const after = await sqlCall(s.sqlUrl, { query: "SELECT count() FROM message_deliveries WHERE project = {p:String} AND notification_id = 'during-scan'", param_p: project }, { headers: key });
  t.equal(after.text, `${batch.length}\n`, 'the SQL listener answers again once the scan is over, and sees the rows');
});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
