import { readFileSync } from 'node:fs';
import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { sqlCall, sqlEngine } from './engine.ts';

const doc = readFileSync(new URL('../../docs/sql.md', import.meta.url), 'utf8');
const worked = doc.slice(doc.indexOf('## Worked queries'));
const queries = [...worked.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');

t.test("every worked query of docs/sql.md runs on the listener and answers the recorded rows", async (t) => {
  t.equal(queries.length, 10, 'ten worked queries');
  const s = await sqlEngine(t);
  const key = { 'X-ClickHouse-Key': s.operatorKey };
  const now = Date.now();
  await s.addOutcomes([
    s.outcome(1, { notification_id: 'n1', external_id: 'u1', at: now - 1000 }),
    s.outcome(2, { notification_id: 'n1', external_id: 'u2', at: now - 1000, attempt: 2 }),
    s.outcome(3, { notification_id: 'n1', external_id: 'u3', at: now - 1000, status: 'failed', error_code: 'apns_410_Unregistered', hint: 'retired', provider_message_id: null }),
  ]);
  const sdk = (path: string, body: unknown) => call(`${s.engine.url}${path}`, 'POST', s.d.project.sdk_key, body);
  t.equal((await sdk('/api/sdk/users', { external_id: 'u1', tags: { plan: 'pro' } })).status, 202);
  t.equal((await sdk('/api/sdk/events', { external_id: 'u1', name: 'purchase', properties: { plan: 'pro' } })).status, 202);
  t.equal((await sdk('/api/sdk/receipts', { svc_message_id: 'n1', external_id: 'u1', kind: 'opened' })).status, 202);

  const params = { param_project: s.d.project.project_id, param_notification: 'n1', param_user: 'u1' };
  const run = (query: string) => sqlCall(s.sqlUrl, { ...params, default_format: 'JSONEachRow' }, { body: query, headers: key });
  const rows = async (query: string) => (await run(query)).text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  await eventually('every recorded row', async () => {
    const counts = await rows(`SELECT
      (SELECT count() FROM message_deliveries WHERE project = {project:String}) AS d,
      (SELECT count() FROM receipts WHERE project = {project:String}) AS r,
      (SELECT count() FROM events WHERE project = {project:String}) AS e,
      (SELECT count() FROM users WHERE project = {project:String}) AS u`);
    const c = counts[0];
    return c && Number(c['d']) === 3 && Number(c['r']) === 1 && Number(c['e']) === 1 && Number(c['u']) >= 1 ? c : undefined;
  });

  const answers: Record<string, unknown>[][] = [];
  for (const [i, query] of queries.entries()) {
    const answer = await run(query);
    t.equal(answer.status, 200, `query ${i + 1} runs: ${answer.status === 200 ? 'ok' : answer.text}`);
    answers.push(answer.status === 200 ? answer.text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) : []);
  }
  t.match(answers[0], [{ error_code: 'apns_410_Unregistered', failed: '1', percent_of_attempts: 33.33 }], '1: one failed attempt in three');
  t.match(answers[1], [{ subscription_type: 'IOS_PUSH', requests: '3' }], '2: latency per provider');
  t.same(answers[2]?.map((r) => r['external_id']), ['u2'], '3: the user sent something who opened nothing');
  t.match(answers[3], [{ sent_users: '2', opened_users: '1' }], '4: the funnel');
  t.ok(answers[4]?.length, '5: daily counts');
  t.match(answers[5], [{ error_code: 'apns_410_Unregistered', attempts: '1' }], '6: top error codes');
  t.match(answers[6], [{ notification_id: 'n1', last_receipt: 'opened' }], "7: the user's history with receipts");
  t.match(answers[7], [{ channel: 'PUSH', retries: '1', retries_sent: '1' }], '8: retries');
  t.match(answers[8], [{ name: 'purchase', events: '1' }], '9: events');
  t.match(answers[9], [{ plan: 'pro', users: '1' }], '10: users by plan');

  const explained = await sqlCall(s.sqlUrl, params, { body: `EXPLAIN projections = 1 ${queries[4] ?? ''}`, headers: key });
  t.match(explained.text, /counts_by_hour/, '5 reads the hourly projection');
});
