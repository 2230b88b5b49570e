import t from 'tap';
import webpush from 'web-push';
import { ProviderStore } from '../../engine/state/keys/provider-store.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';

// GET /api/sdk/web-push: what the web SDK subscribes a browser with.
const d = await deployment(t);
const gw = await d.start(['gateway']);

t.test('the VAPID public key and the receipt setting, never the private key; 404 without credentials', async (t) => {
  const project = await d.createProject();
  const redis = createRedis(loadConfig(d.env));
  t.teardown(() => redis.disconnect());
  const topology = new Topology(d.prefix, 8);
  const url = `${gw.url}/api/sdk/web-push`;

  const none = await call(url, 'GET', project.sdk_key);
  t.equal(none.status, 404, 'no Web Push credentials');
  t.match(none.body, { errors: [{ code: 'not_found', message: /no Web Push credentials/ }] });
  t.equal((await call(url, 'GET', null)).status, 401, 'a key is needed');

  const vapid = webpush.generateVAPIDKeys();
  await new ProviderStore(redis, topology).set(project.project_id, 'webpush', { vapid_public_key: vapid.publicKey, vapid_private_key: vapid.privateKey, subject: 'mailto:ops@example.com' });
  const answer = await call(url, 'GET', project.sdk_key);
  t.same(answer, { ...answer, status: 200, body: { vapid_public_key: vapid.publicKey, delivered_receipts: false } });
  t.notMatch(JSON.stringify(answer.body), vapid.privateKey, 'the private key stays on the server');

  await new Keystore(redis, topology).setWebDeliveredReceipts(project.project_id, true);
  // A gateway that has not cached the project's key yet sees the setting at once.
  const other = await d.start(['gateway']);
  const fresh = await call(`${other.url}/api/sdk/web-push`, 'GET', project.rest_key);
  t.match(fresh, { status: 200, body: { delivered_receipts: true } }, 'the setting, to a REST key too');
});
