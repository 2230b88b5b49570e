import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { freePort } from '../../bench/redis-server.ts';
import { eventually } from '../helpers/http.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';

// `make run` (scripts/run.sh) as a newcomer runs it: in a checkout of its own (its build writes
// dist/, which the other tests run from), with the default DATA_DIR (./.data, relative), the
// simulators as providers, a notification delivered, and Ctrl-C stopping every process it started.

const root = fileURLToPath(new URL('../../', import.meta.url));
/** What a checkout holds that scripts/run.sh makes or installs itself. */
const NOT_COPIED = new Set(['node_modules', 'dist', '.cache', '.data', '.tap', '.git', 'test-output']);

/** True while a process of the group `pgid` lives. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('make run: a notification delivered by the simulators, then Ctrl-C stops every process', { skip: process.env['CLICKHOUSE_URL'] !== undefined && 'the embedded engine only' }, async (t) => {
  // Under the system's temporary folder, which the ClickHouse sandbox hides and binds back; its
  // node_modules a link to this checkout's, as some installs lay it out.
  const checkout = mkdtempSync(join(tmpdir(), 'make-run-'));
  t.teardown(() => rmSync(checkout, { recursive: true, force: true }));
  cpSync(root, checkout, { recursive: true, preserveTimestamps: true, filter: (from) => !NOT_COPIED.has(from.slice(root.length).split('/')[0] ?? '') });
  symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'));
  const prefix = testPrefix();
  t.teardown(() => cleanupPrefix(prefix));

  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL, KEY_PREFIX: prefix, PORT: String(await freePort()), SQL_PORT: '0' };
  delete env['NODE_OPTIONS'];
  delete env['DATA_DIR'];
  const run = spawn('bash', ['scripts/run.sh'], { cwd: checkout, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pgid = run.pid ?? 0;
  t.teardown(() => {
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  });
  let printed = '';
  run.stdout.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
  run.stderr.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => run.once('close', (c) => resolve((code = c))));
  const stillRunning = (): void => {
    if (code !== undefined) throw new Error(`make run ended with ${code}; its last output:\n${printed.slice(-3000)}`);
  };

  const variables = await eventually(
    'the quick start printed',
    async () => {
      stillRunning();
      const values = Object.fromEntries([...printed.matchAll(/^(SDK|REST|BASE)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
      return values['SDK'] && values['REST'] && values['BASE'] ? (values as Record<'SDK' | 'REST' | 'BASE', string>) : undefined;
    },
    600_000,
  );
  const { SDK: sdk, REST: rest, BASE: base } = variables;
  await eventually(
    'the engine ready',
    async () => {
      stillRunning();
      return (await fetch(`${base}/readyz`).catch(() => null))?.status === 200 ? true : undefined;
    },
    120_000,
  );

  const json = { 'content-type': 'application/json' };
  const registered = await fetch(`${base}/api/sdk/users/alice/subscriptions`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${sdk}` },
    body: JSON.stringify({ type: 'IOS_PUSH', token: 'a1'.repeat(32) }),
  });
  t.equal(registered.status, 202, 'a subscription is accepted');
  await eventually('alice applied', async () => ((await fetch(`${base}/api/users/alice`, { headers: { authorization: `Bearer ${rest}` } })).status === 200 ? true : undefined));
  const sent = await fetch(`${base}/api/notifications`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${rest}` },
    body: JSON.stringify({ include_external_user_ids: ['alice'], contents: { en: 'Hello' } }),
  });
  t.equal(sent.status, 201, 'a notification is created');
  t.match(await sent.json(), { recipients: 1 }, 'for alice');
  const delivery = await eventually(
    'the delivery recorded',
    async () => {
      const answer = (await (await fetch(`${base}/api/deliveries?external_id=alice`, { headers: { authorization: `Bearer ${rest}` } })).json()) as { deliveries?: { status: string }[] };
      return answer.deliveries?.[0];
    },
    60_000,
  );
  t.match(delivery, { status: 'sent', subscription_type: 'IOS_PUSH', provider_message_id: String }, 'sent through the APNs simulator, recorded in ClickHouse');
  t.ok(readdirSync(join(checkout, '.data/clickhouse')).length > 0, 'the embedded ClickHouse keeps its data under ./.data');

  process.kill(-pgid, 'SIGINT');
  t.equal(await exited, 0, 'Ctrl-C: make run ends cleanly');
  await eventually('every process of make run gone', async () => (groupAlive(pgid) ? undefined : true), 30_000);
  t.notOk(existsSync(join(checkout, '.data/clickhouse-host/.data')), 'nothing written under the ClickHouse host\'s own folder');
});
