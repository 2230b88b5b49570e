import t from 'tap';
import { finish, openPage } from '../helpers/browser.ts';
import { deployment } from '../helpers/engine.ts';
import { Ledger } from '../helpers/overload.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

// The dashboard tells operators when the gateway refuses buffered writes: a banner with the reason
// /readyz gives, for as long as it lasts.
const FILE = 'overload-banner';

t.test('while the gateway refuses writes for a full Redis, the dashboard shows why', async (t) => {
  const redis = await PrivateRedis.start({ maxmemory: '8mb' });
  t.teardown(() => redis.stop());
  const d = await deployment(t, { env: { REDIS_URL: redis.url, SPILL_MAX_BYTES: String(256 * 1024) } });
  const gateway = await d.start(['gateway']);
  const ledger = new Ledger();
  const started = Date.now();
  while (ledger.overloaded.length === 0 && ledger.other.length === 0 && Date.now() - started < 30_000) await ledger.sendBatch(gateway.url, d.project.sdk_key);
  t.ok(ledger.overloaded.length > 0, 'the gateway refuses: Redis past its watermark');

  const p = await openPage(t, FILE);
  await p.page.goto(`${gateway.url}/dashboard`);
  await p.page.fill('input[name=key]', d.project.rest_key);
  await p.page.click('form.gate button[type=submit]');
  await p.page.waitForSelector('.banner[role=alert]');
  // Which of the two reasons depends on when the gateway read the workers' backlog: found empty
  // (no apply role runs, so no group reads the streams), it leaves no room to journal; before that
  // reading, the journal fills first.
  t.match(await p.page.textContent('.banner'), /^Overloaded: Buffered writes are refused: Redis holds .*(spill journal is full|live state that waiting does not free)/, 'the banner says why');
  await finish(t, p, 'overloaded', gateway.url, [d.project.rest_key, d.project.sdk_key]);
});
