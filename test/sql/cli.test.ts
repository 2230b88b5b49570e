import t from 'tap';
import { runEngine } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import { sqlEngine } from './engine.ts';

t.test('engine sql answers through the running engine, and on the data once it is stopped', async (t) => {
  const s = await sqlEngine(t);
  const project = s.d.project.project_id;
  await s.addOutcomes(Array.from({ length: 4 }, (_, i) => s.outcome(i)));
  const query = `SELECT status, count() FROM message_deliveries WHERE project = '${project}' GROUP BY status`;
  const withKey = { ...s.env, SQL_KEY: s.operatorKey };

  const running = await eventually('the recorded outcomes', async () => {
    const run = await runEngine(['sql', query], withKey);
    return run.stdout === 'sent\t4\n' ? run : undefined;
  });
  t.equal(running.code, 0, 'TSV when stdout is not a terminal, through the listener');
  const csv = await runEngine(['sql', query, '--format', 'CSV'], withKey);
  t.equal(csv.stdout, '"sent",4\n', '--format picks any format of the engine');
  const refused = await runEngine(['sql', 'DROP TABLE message_deliveries'], withKey);
  t.equal(refused.code, 1, 'a write is refused');
  t.match(refused.stderr, /READONLY/, "with ClickHouse's error");
  const wrongKey = await runEngine(['sql', query], { ...s.env, SQL_KEY: 'operator_wrong' });
  t.equal(wrongKey.code, 1, 'a wrong SQL_KEY is refused');
  t.match(wrongKey.stderr, /AUTHENTICATION_FAILED/);
  if (s.env['CLICKHOUSE_URL'] === undefined) {
    const noKey = await runEngine(['sql', query], s.env);
    t.equal(noKey.code, 1, 'without SQL_KEY, the embedded engine held by the running engine cannot be read');
    t.match(noKey.stderr, new RegExp(`held by process ${s.engine.proc.pid}.*SQL_KEY`));
  }

  t.equal(await s.engine.stop(), 0);
  const stopped = await runEngine(['sql', query], withKey);
  t.equal(stopped.code, 0, stopped.stderr);
  t.equal(stopped.stdout, 'sent\t4\n', 'with the engine stopped, engine sql opens the data itself');
  const stoppedWrite = await runEngine(['sql', 'DROP TABLE message_deliveries'], s.env);
  t.match(stoppedWrite.stderr, /READONLY/, 'read-only there too');
  const intact = await runEngine(['sql', 'SELECT count() FROM message_deliveries'], s.env);
  t.equal(intact.stdout, '4\n', 'the tables are intact');
});
