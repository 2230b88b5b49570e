import { readFileSync } from 'node:fs';
import t from 'tap';
import { actionOf, deliveryCode, DeliveryCodes, hintOf, ownCode } from '../../../schemas/delivery-codes.ts';

const providersMd = readFileSync(new URL('../../../../shared/PROVIDERS.md', import.meta.url), 'utf8');
const apiMd = readFileSync(new URL('../../../../shared/API.md', import.meta.url), 'utf8');

/** `| codes | action ... |` rows of the PROVIDERS.md error table. */
function errorTable(): [string, string][] {
  const rows: [string, string][] = [];
  const table = providersMd.slice(providersMd.indexOf('## Error table'));
  for (const line of table.split('\n')) {
    const m = /^\| ([a-z].*?) \| ([A-Z]+)\b.* \|$/.exec(line);
    if (!m?.[1] || !m[2] || m[1] === 'code') continue;
    for (const code of m[1].split(',').map((c) => c.trim())) if (/^[a-z]+_?[A-Za-z0-9_]*$/.test(code)) rows.push([code, m[2]]);
  }
  return rows;
}

t.test('every code of the PROVIDERS.md error table is registered with its action', async (t) => {
  const rows = errorTable();
  t.ok(rows.length >= 40, `read ${rows.length} codes from the table`);
  for (const [code, action] of rows) {
    t.ok(code in DeliveryCodes, `${code} is registered`);
    t.equal(actionOf(code), action, `${code} is ${action}`);
  }
});

t.test('every delivery code API.md section 5 names has an action and a hint', async (t) => {
  const section = apiMd.slice(apiMd.indexOf('## 5.'), apiMd.indexOf('## 6.'));
  const named = [...section.matchAll(/`((?:apns|fcm|webpush|twilio|sendgrid)_[A-Za-z0-9_]+|timeout|connection_error|opted_out|no_subscription|canceled)`/g)].map((m) => m[1] as string);
  t.ok(named.length >= 10);
  for (const code of named) t.ok(code in DeliveryCodes, `${code} is registered`);
});

t.test('every registered code has a one-sentence hint', async (t) => {
  for (const [code, def] of Object.entries(DeliveryCodes)) {
    t.match(def.hint, /^[A-Z].*[.)]$/, `${code} hint is a sentence`);
    t.equal(hintOf(code), def.hint);
  }
});

t.test('provider answers become codes with the provider, status and reason', async (t) => {
  t.same(deliveryCode('apns', 410, 'Unregistered'), { code: 'apns_410_Unregistered', action: 'DROP', hint: DeliveryCodes.apns_410_Unregistered.hint });
  t.match(deliveryCode('fcm', 404, 'UNREGISTERED'), { code: 'fcm_404_UNREGISTERED', action: 'DROP' });
  t.match(deliveryCode('webpush', 502, null), { code: 'webpush_502', action: 'RETRY', hint: DeliveryCodes.webpush_5xx.hint });
  t.match(deliveryCode('sendgrid', 500), { code: 'sendgrid_500', action: 'RETRY', hint: DeliveryCodes.sendgrid_5xx.hint });
  t.match(deliveryCode('twilio', 400, 21610), { code: 'twilio_21610', action: 'DROP' });
  t.match(deliveryCode('twilio', 503, null), { code: 'twilio_503', action: 'RETRY' });
  t.match(deliveryCode('apns', 200, null), { action: 'OK' });
});

t.test('unknown reasons map by rule: 429 and 5xx retry, other 4xx fail, APNs 410 drops', async (t) => {
  t.match(deliveryCode('apns', 400, 'SomethingNew'), { code: 'apns_400_SomethingNew', action: 'FAIL', hint: /\w/ });
  t.match(deliveryCode('apns', 410, 'SomethingNew'), { code: 'apns_410_SomethingNew', action: 'DROP' });
  t.match(deliveryCode('apns', 502, 'BadGateway'), { action: 'RETRY' });
  t.match(deliveryCode('fcm', 429, 'NEW_QUOTA'), { code: 'fcm_429_NEW_QUOTA', action: 'RETRY' });
  t.match(deliveryCode('fcm', 403, 'PERMISSION_DENIED'), { action: 'FAIL' });
  t.match(deliveryCode('twilio', 400, 21999), { code: 'twilio_21999', action: 'FAIL' });
  t.match(deliveryCode('webpush', 408, null), { code: 'webpush_408', action: 'RETRY' });
  t.equal(actionOf('apns_400_SomethingNew'), 'FAIL');
  t.equal(actionOf('apns_410_SomethingNew'), 'DROP');
  t.equal(actionOf('webpush_599'), 'RETRY');
  t.match(hintOf('something_else'), /Unknown/);
  t.match(deliveryCode('apns', 400, 'Bad "reason"/x'), { code: 'apns_400_Badreasonx' }, 'reasons are cleaned to a code');
});

t.test('FCM INVALID_ARGUMENT drops only when the message says the token is invalid', async (t) => {
  t.match(deliveryCode('fcm', 400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token'), { code: 'fcm_400_INVALID_ARGUMENT', action: 'DROP' });
  t.match(deliveryCode('fcm', 400, 'INVALID_ARGUMENT', 'Message is too big'), { code: 'fcm_400_INVALID_ARGUMENT', action: 'FAIL' });
});

t.test('our own codes: transport failures retry, skips and missing credentials fail', async (t) => {
  t.match(ownCode('timeout'), { action: 'RETRY' });
  t.match(ownCode('connection_error'), { action: 'RETRY' });
  for (const code of ['opted_out', 'no_subscription', 'canceled', 'no_credentials'] as const) t.match(ownCode(code), { code, action: 'FAIL', hint: /\w/ });
  t.equal(DeliveryCodes.no_credentials.alert, true);
});
