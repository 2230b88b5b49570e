import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { runEngine, testEnv } from '../helpers/engine.ts';
import { cleanupPrefix, testPrefix } from '../helpers/redis.ts';

const prefix = testPrefix();
const env = testEnv(prefix);
const config = loadConfig(env);
const redis = createRedis(config);
const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
t.teardown(async () => {
  redis.disconnect();
  await cleanupPrefix(prefix);
});

t.test('project create --json prints exactly project_id, sdk_key, rest_key, identity_secret', async (t) => {
  const { code, stdout, stderr } = await runEngine(['project', 'create', 'shop', '--json'], env);
  t.equal(code, 0, stderr);
  const lines = stdout.trim().split('\n');
  t.equal(lines.length, 1, 'one line of output');
  const created = JSON.parse(lines[0] ?? '') as CreatedProject;
  t.same(Object.keys(created).sort(), ['identity_secret', 'project_id', 'rest_key', 'sdk_key']);
  t.match(created.sdk_key, /^sdk_/);
  t.match(created.rest_key, /^rest_/);
  t.match(created.identity_secret, /^[0-9a-f]{64}$/);

  const project = await keystore.getProject(created.project_id);
  t.equal(project?.name, 'shop');
  t.equal(project?.identity_verification, false);
  t.equal(project?.identity_secret, created.identity_secret);
  t.same(await keystore.lookupKey(created.sdk_key), { project_id: created.project_id, type: 'sdk' });
  t.same(await keystore.lookupKey(created.rest_key), { project_id: created.project_id, type: 'rest' });
});

t.test('project create without --json prints one "field: value" line per field', async (t) => {
  const { code, stdout } = await runEngine(['project', 'create', 'plain', '--identity-verification'], env);
  t.equal(code, 0);
  const fields = Object.fromEntries(stdout.trim().split('\n').map((line) => line.split(': ')));
  t.same(Object.keys(fields).sort(), ['identity_secret', 'project_id', 'rest_key', 'sdk_key']);
  t.equal((await keystore.getProject(String(fields['project_id'])))?.identity_verification, true);
});

t.test('project update --identity-verification on|off changes the stored project', async (t) => {
  const created = await keystore.createProject('toggle', false);
  const on = await runEngine(['project', 'update', created.project_id, '--identity-verification', 'on'], env);
  t.equal(on.code, 0, on.stderr);
  t.equal((await keystore.getProject(created.project_id))?.identity_verification, true);

  const off = await runEngine(['project', 'update', created.project_id, '--identity-verification', 'off'], env);
  t.equal(off.code, 0, off.stderr);
  t.equal((await keystore.getProject(created.project_id))?.identity_verification, false);
});

t.test('project update --web-delivered-receipts on|off changes the stored project', async (t) => {
  const created = await keystore.createProject('receipts', false);
  t.equal((await keystore.getProject(created.project_id))?.web_delivered_receipts, false, 'off by default');
  const on = await runEngine(['project', 'update', created.project_id, '--web-delivered-receipts', 'on'], env);
  t.equal(on.code, 0, on.stderr);
  t.match(on.stdout, /web delivered receipts on/);
  t.equal((await keystore.getProject(created.project_id))?.web_delivered_receipts, true);
  const off = await runEngine(['project', 'update', created.project_id, '--web-delivered-receipts', 'off'], env);
  t.equal(off.code, 0, off.stderr);
  t.equal((await keystore.getProject(created.project_id))?.web_delivered_receipts, false);
});

t.test('project update of an unknown project exits 1 and names it', async (t) => {
  const { code, stderr } = await runEngine(['project', 'update', 'no-such-project', '--identity-verification', 'on'], env);
  t.equal(code, 1);
  t.match(stderr, /unknown project no-such-project/);
});
