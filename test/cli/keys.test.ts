import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore, hashKey } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment, runEngine } from '../helpers/engine.ts';

t.test('keys create, list and revoke', async (t) => {
  const d = await deployment(t);
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
  const projectId = d.project.project_id;

  const sdk = await runEngine(['keys', 'create', projectId, '--type', 'sdk', '--json'], d.env);
  t.equal(sdk.code, 0, sdk.stderr);
  const sdkKey = (JSON.parse(sdk.stdout) as { key: string }).key;
  t.same(Object.keys(JSON.parse(sdk.stdout) as object), ['key'], '--json prints only the key');
  t.same(await keystore.lookupKey(sdkKey), { project_id: projectId, type: 'sdk' });

  const rest = await runEngine(['keys', 'create', projectId, '--type', 'rest'], d.env);
  t.equal(rest.code, 0, rest.stderr);
  const restKey = rest.stdout.trim();
  t.match(restKey, /^rest_/, 'without --json the key alone is printed');
  t.same(await keystore.lookupKey(restKey), { project_id: projectId, type: 'rest' });

  const list = await runEngine(['keys', 'list', projectId], d.env);
  t.equal(list.code, 0, list.stderr);
  const lines = list.stdout.trim().split('\n');
  t.equal(lines.length, 4, 'the two keys of the project and the two new ones');
  for (const secret of [sdkKey, restKey, d.project.sdk_key, d.project.rest_key]) {
    t.notOk(list.stdout.includes(secret), 'a key never appears in the listing');
  }
  t.equal(lines.filter((l) => /\bsdk\b/.test(l)).length, 2);
  t.equal(lines.filter((l) => /\brest\b/.test(l)).length, 2);

  const revoke = await runEngine(['keys', 'revoke', sdkKey], d.env);
  t.equal(revoke.code, 0, revoke.stderr);
  t.equal(await keystore.lookupKey(sdkKey), null, 'a revoked key no longer resolves');
  t.same(await keystore.lookupKey(d.project.sdk_key), { project_id: projectId, type: 'sdk' }, 'other keys still work');

  const listed = await runEngine(['keys', 'list', projectId], d.env);
  t.equal(listed.stdout.split('\n').filter((l) => l.includes('revoked')).length, 1, 'the listing marks the revoked key');
});

t.test('keys create for an unknown project and revoke of an unknown key exit 1', async (t) => {
  const d = await deployment(t);
  const create = await runEngine(['keys', 'create', 'no-such-project', '--type', 'sdk'], d.env);
  t.equal(create.code, 1);
  t.match(create.stderr, /unknown project no-such-project/);
  const revoke = await runEngine(['keys', 'revoke', 'sdk_not_a_real_key'], d.env);
  t.equal(revoke.code, 1);
  t.match(revoke.stderr, /no such key/);
});

t.test('operator keys: created without a project, listed, revoked, refused by the public API', async (t) => {
  const d = await deployment(t);
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const keystore = new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));

  const created = await runEngine(['keys', 'create', '--type', 'operator', '--json'], d.env);
  t.equal(created.code, 0, created.stderr);
  t.same(Object.keys(JSON.parse(created.stdout) as object), ['key'], '--json prints only the key');
  const key = (JSON.parse(created.stdout) as { key: string }).key;
  t.match(key, /^operator_/);
  t.equal(await keystore.lookupKey(key), null, 'an operator key opens no project');
  t.same(await keystore.liveOperatorKeyHashes(), [hashKey(key)]);

  const withProject = await runEngine(['keys', 'create', d.project.project_id, '--type', 'operator'], d.env);
  t.equal(withProject.code, 2, 'an operator key takes no project');
  const withoutProject = await runEngine(['keys', 'create', '--type', 'rest'], d.env);
  t.equal(withoutProject.code, 2, 'a project key needs its project');
  t.match(withoutProject.stderr, /needs <project_id>/);

  const list = await runEngine(['keys', 'list'], d.env);
  t.equal(list.code, 0, list.stderr);
  t.equal(list.stdout.trim().split('\n').length, 1, 'the one operator key');
  t.match(list.stdout, /\boperator\b/);
  t.match(list.stdout, new RegExp(`${key.slice(0, 13)}…`), 'the key\'s first characters past its type');
  t.notOk(list.stdout.includes(key), 'the key never appears in the listing');
  const projectList = await runEngine(['keys', 'list', d.project.project_id], d.env);
  t.notMatch(projectList.stdout, /operator/, "a project's listing has no operator key");

  const revoke = await runEngine(['keys', 'revoke', key], d.env);
  t.equal(revoke.code, 0, revoke.stderr);
  t.same(await keystore.liveOperatorKeyHashes(), [], 'a revoked operator key is no longer live');
  t.match((await runEngine(['keys', 'list'], d.env)).stdout, /revoked/);
});
