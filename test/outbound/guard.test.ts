import t from 'tap';
import { guardedLookup, outboundPolicy, refusedAddress, refusedUrl, type OutboundPolicy } from '../../engine/infra/outbound/guard.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';

/** The outbound guard's rules (docs/api.md#outbound-urls), address by address and URL by URL. */

const strict: OutboundPolicy = { allowPrivate: false, webPushHosts: undefined };
const local: OutboundPolicy = { allowPrivate: true, webPushHosts: undefined };

t.test('loopback, private, link-local, metadata, shared, unspecified and multicast addresses are refused', async (t) => {
  const refused = ['127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fd00:ec2::254', 'fc00::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '::ffff:8.8.8.8'];
  for (const address of refused) t.ok(refusedAddress(address), `${address} refused (${refusedAddress(address)})`);
  const allowed = ['8.8.8.8', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2607:f8b0:4004:800::200e'];
  for (const address of allowed) t.equal(refusedAddress(address), undefined, `${address} allowed`);
});

t.test('a URL is refused for its scheme, credentials, a literal refused address, or a host off WEBPUSH_HOSTS', async (t) => {
  const cases: [string, 'webpush' | 'webhook', OutboundPolicy, string | undefined][] = [
    ['https://fcm.googleapis.com/fcm/send/abc', 'webpush', strict, undefined],
    ['https://127.0.0.1:8443/internal', 'webpush', strict, 'must not point at a loopback address'],
    ['https://169.254.169.254/latest/meta-data/', 'webpush', strict, 'must not point at a link-local or metadata address'],
    ['https://[::1]:8443/x', 'webpush', strict, 'must not point at a loopback address'],
    ['https://[::ffff:10.0.0.1]/x', 'webpush', strict, 'must not point at an IPv4-mapped address'],
    ['https://0.0.0.0/x', 'webpush', strict, 'must not point at an unspecified address'],
    ['https://localhost:8443/x', 'webpush', strict, undefined],
    ['https://user:secret@push.example.com/x', 'webpush', strict, 'must not carry credentials'],
    ['http://push.example.com/x', 'webpush', strict, 'must be an https URL'],
    ['http://hooks.example.com/x', 'webhook', strict, undefined],
    ['ftp://hooks.example.com/x', 'webhook', strict, 'must be an https or http URL'],
    ['https://127.0.0.1:8443/internal', 'webpush', local, undefined],
    ['https://updates.push.services.mozilla.com/wpush/v2/x', 'webpush', { allowPrivate: false, webPushHosts: ['.push.services.mozilla.com', 'fcm.googleapis.com'] }, undefined],
    ['https://fcm.googleapis.com/x', 'webpush', { allowPrivate: false, webPushHosts: ['.push.services.mozilla.com', 'fcm.googleapis.com'] }, undefined],
    ['https://evil.example.com/x', 'webpush', { allowPrivate: true, webPushHosts: ['fcm.googleapis.com'] }, 'host evil.example.com is not on WEBPUSH_HOSTS'],
    ['https://evil.example.com/x', 'webhook', { allowPrivate: false, webPushHosts: ['fcm.googleapis.com'] }, undefined],
  ];
  for (const [url, use, policy, why] of cases) t.equal(refusedUrl(policy, use, url), why, `${use} ${url}`);
});

t.test('the policy comes from OUTBOUND_ALLOW_PRIVATE and WEBPUSH_HOSTS', async (t) => {
  t.same(outboundPolicy(loadConfig({})), strict);
  t.same(outboundPolicy(loadConfig({ OUTBOUND_ALLOW_PRIVATE: 'true', WEBPUSH_HOSTS: ' FCM.googleapis.com, .push.apple.com ' })), {
    allowPrivate: true,
    webPushHosts: ['fcm.googleapis.com', '.push.apple.com'],
  });
});

t.test('the lookup drops refused addresses and fails when none is left', async (t) => {
  const lookup = guardedLookup(strict);
  if (lookup === undefined) throw new Error('a strict policy has a lookup');
  const err = await new Promise<NodeJS.ErrnoException | null>((resolve) => lookup('localhost', { all: true }, (e) => resolve(e)));
  t.equal(err?.code, 'EOUTBOUND_REFUSED');
  t.match(err?.message, /localhost resolves only to refused addresses/);
  t.equal(guardedLookup(local), undefined, 'no lookup of its own when private addresses are allowed');
});
