import { readFileSync } from 'node:fs';
import t from 'tap';
import { actionOf, deliveryCode, DeliveryCodes, hintOf, ownCode, type DeliveryCode } from '../../../schemas/delivery-codes.ts';

const providersMd = readFileSync(new URL('../../../docs/providers.md', import.meta.url), 'utf8');

interface DocumentedCode {
  action: string;
  alert: boolean;
  hint: string;
}

/** Rows `| `code` | ACTION | yes or nothing | hint |` of the code tables of docs/providers.md. */
function documentedCodes(): Map<string, DocumentedCode[]> {
  const rows = new Map<string, DocumentedCode[]>();
  for (const line of providersMd.split('\n')) {
    const m = /^\| `([a-z][A-Za-z0-9_]*)` \| ([A-Z]+) \| (yes)? ?\| (.+) \|$/.exec(line);
    if (!m?.[1] || !m[2] || !m[4]) continue;
    rows.set(m[1], [...(rows.get(m[1]) ?? []), { action: m[2], alert: m[3] === 'yes', hint: m[4] }]);
  }
  return rows;
}

t.test('every registered code is documented once in docs/providers.md with its action, alert and hint', async (t) => {
  const documented = documentedCodes();
  for (const [code, def] of Object.entries(DeliveryCodes)) {
    t.same(documented.get(code), [{ action: def.action, alert: 'alert' in def, hint: def.hint }], `${code} is documented as registered`);
  }
});

t.test('every code documented in docs/providers.md is registered', async (t) => {
  const documented = documentedCodes();
  t.ok(documented.size >= 50, `read ${documented.size} codes from the tables`);
  for (const code of documented.keys()) t.ok(Object.hasOwn(DeliveryCodes, code), `${code} is registered`);
});

t.test('the codes docs/api.md names are registered', async (t) => {
  // Less the table of OneSignal's fields, some of which (apns_alert) look like codes.
  const fullApiMd = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const moving = fullApiMd.indexOf('## Moving from OneSignal');
  const apiMd = fullApiMd.slice(0, moving) + fullApiMd.slice(fullApiMd.indexOf('\n## ', moving + 1));
  const named = [...apiMd.matchAll(/`((?:apns|fcm|webpush|twilio|sendgrid)_[A-Za-z0-9_]+|timeout|connection_error|opted_out|no_subscription|canceled|no_credentials)`/g)].map(
    (m) => m[1] as string,
  );
  t.ok(named.length >= 10, `docs/api.md names ${named.length} codes`);
  for (const code of named) t.ok(Object.hasOwn(DeliveryCodes, code as DeliveryCode), `${code} is registered`);
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
