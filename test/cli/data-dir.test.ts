import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { TEST_CLICKHOUSE_URL } from '../clickhouse-server/database.ts';
import { deployment } from '../helpers/engine.ts';

// DATA_DIR is relative by default (./.data, as `make run` and a newcomer's `engine start` use it):
// every role finds its data from there, the embedded ClickHouse's process included, which runs in
// a folder of its own.
t.test('engine start with a DATA_DIR relative to its folder: the recorder opens the embedded ClickHouse there', { skip: TEST_CLICKHOUSE_URL !== undefined && 'the embedded engine only' }, async (t) => {
  const d = await deployment(t);
  const dataDir = d.env['DATA_DIR'] ?? '';
  const engine = await d.start(['gateway', 'recorder'], { DATA_DIR: relative(process.cwd(), dataDir) });
  const ready = await fetch(`${engine.url}/readyz`);
  t.equal(ready.status, 200, '/readyz: Redis and ClickHouse answer');
  t.ok(readdirSync(join(dataDir, 'clickhouse')).length > 0, 'the data is under DATA_DIR/clickhouse');
  t.equal(await engine.stop(), 0, 'it stops cleanly');
});
