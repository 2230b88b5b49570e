import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { ProviderStore } from '../../engine/state/keys/provider-store.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment, runEngine } from '../helpers/engine.ts';

const dir = mkdtempSync(join(tmpdir(), 'creds-'));
function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const apns = {
  team_id: 'TEAM123456',
  key_id: 'KEY1234567',
  private_key: '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----\n',
  topic: 'com.example.app',
  environment: 'sandbox',
};

t.test('providers set stores validated credentials with the default base_url', async (t) => {
  const d = await deployment(t);
  const ok = await runEngine(['providers', 'set', d.project.project_id, 'apns', '--file', file('apns.json', apns)], d.env);
  t.equal(ok.code, 0, ok.stderr);
  const twilio = { account_sid: 'AC1', auth_token: 'tok', from: '+15550001111', base_url: 'http://127.0.0.1:9999' };
  t.equal((await runEngine(['providers', 'set', d.project.project_id, 'twilio', '--file', file('tw.json', twilio)], d.env)).code, 0);

  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const store = new ProviderStore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
  t.same(await store.get(d.project.project_id, 'apns'), { ...apns, base_url: 'https://api.sandbox.push.apple.com' });
  t.same(await store.get(d.project.project_id, 'twilio'), twilio, 'an explicit base_url is kept');
  t.equal(await store.get(d.project.project_id, 'fcm'), null);
});

t.test('providers set refuses bad files, providers and projects with a message', async (t) => {
  const d = await deployment(t);
  const id = d.project.project_id;
  const missing = await runEngine(['providers', 'set', id, 'apns', '--file', file('bad.json', { ...apns, topic: undefined, extra: 1 })], d.env);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /\/topic: must have required property 'topic'/);
  t.match(missing.stderr, /additional properties \(extra\)/);
  const notJson = await runEngine(['providers', 'set', id, 'sendgrid', '--file', file('x.json', '{nope')], d.env);
  t.equal(notJson.code, 1);
  t.match(notJson.stderr, /cannot read .* as JSON/);
  const unknownProvider = await runEngine(['providers', 'set', id, 'pigeon', '--file', file('apns2.json', apns)], d.env);
  t.equal(unknownProvider.code, 2);
  t.match(unknownProvider.stderr, /unknown provider "pigeon"/);
  const unknownProject = await runEngine(['providers', 'set', 'nope', 'apns', '--file', file('apns3.json', apns)], d.env);
  t.equal(unknownProject.code, 1);
  t.match(unknownProject.stderr, /unknown project nope/);
});
