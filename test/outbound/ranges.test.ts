import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import t from 'tap';
import { guardedLookup, refusedAddress, refusedUrl, type OutboundPolicy } from '../../engine/infra/outbound/guard.ts';
import { IPV4_RANGES, IPV6_RANGES } from '../../engine/infra/outbound/special-ranges.ts';

/**
 * Every special-purpose range the guard refuses (docs/api.md#outbound-urls), written out here
 * independently of engine/infra/outbound/special-ranges.ts: its first and last address (and a telling
 * one) are refused, by address and in a URL for both uses, and the public addresses just outside
 * it are allowed.
 */

const strict: OutboundPolicy = { allowPrivate: false, webPushHosts: undefined };
const local: OutboundPolicy = { allowPrivate: true, webPushHosts: undefined };

/** [range, addresses inside it, public addresses just outside it (none when its neighbours are refused too)]. */
const RANGES: [string, string[], string[]][] = [
  // IANA IPv4 Special-Purpose Address Registry.
  ['0.0.0.0/8', ['0.0.0.1', '0.255.255.255'], ['1.0.0.0']],
  ['0.0.0.0/32', ['0.0.0.0'], []],
  ['10.0.0.0/8', ['10.0.0.0', '10.255.255.255'], ['9.255.255.255', '11.0.0.0']],
  ['100.64.0.0/10', ['100.64.0.0', '100.127.255.255'], ['100.63.255.255', '100.128.0.0']],
  ['127.0.0.0/8', ['127.0.0.0', '127.255.255.255'], ['126.255.255.255', '128.0.0.0']],
  ['169.254.0.0/16', ['169.254.0.0', '169.254.169.254', '169.254.255.255'], ['169.253.255.255', '169.255.0.0']],
  ['172.16.0.0/12', ['172.16.0.0', '172.31.255.255'], ['172.15.255.255', '172.32.0.0']],
  ['192.0.0.0/24', ['192.0.0.0', '192.0.0.255'], ['191.255.255.255', '192.0.1.0']],
  ['192.0.0.0/29', ['192.0.0.0', '192.0.0.7'], []],
  ['192.0.0.8/32', ['192.0.0.8'], []],
  ['192.0.0.9/32', ['192.0.0.9'], []],
  ['192.0.0.10/32', ['192.0.0.10'], []],
  ['192.0.0.170/32', ['192.0.0.170'], []],
  ['192.0.0.171/32', ['192.0.0.171'], []],
  ['192.0.2.0/24', ['192.0.2.0', '192.0.2.255'], ['192.0.1.255', '192.0.3.0']],
  ['192.31.196.0/24', ['192.31.196.0', '192.31.196.255'], ['192.31.195.255', '192.31.197.0']],
  ['192.52.193.0/24', ['192.52.193.0', '192.52.193.255'], ['192.52.192.255', '192.52.194.0']],
  ['192.88.99.0/24', ['192.88.99.0', '192.88.99.1', '192.88.99.255'], ['192.88.98.255', '192.88.100.0']],
  ['192.88.99.2/32', ['192.88.99.2'], []],
  ['192.168.0.0/16', ['192.168.0.0', '192.168.255.255'], ['192.167.255.255', '192.169.0.0']],
  ['192.175.48.0/24', ['192.175.48.0', '192.175.48.255'], ['192.175.47.255', '192.175.49.0']],
  ['198.18.0.0/15', ['198.18.0.0', '198.18.0.1', '198.19.255.255'], ['198.17.255.255', '198.20.0.0']],
  ['198.51.100.0/24', ['198.51.100.0', '198.51.100.255'], ['198.51.99.255', '198.51.101.0']],
  ['203.0.113.0/24', ['203.0.113.0', '203.0.113.255'], ['203.0.112.255', '203.0.114.0']],
  ['240.0.0.0/4', ['240.0.0.0', '255.255.255.254'], []],
  ['255.255.255.255/32', ['255.255.255.255'], []],
  // Multicast (its own registry).
  ['224.0.0.0/4', ['224.0.0.0', '239.255.255.255'], ['223.255.255.255']],
  // IANA IPv6 Special-Purpose Address Registry.
  ['::/128', ['::'], []],
  ['::1/128', ['::1'], []],
  ['::ffff:0:0/96', ['::ffff:0.0.0.0', '::ffff:8.8.8.8', '::ffff:255.255.255.255'], []],
  ['64:ff9b::/96', ['64:ff9b::', '64:ff9b::7f00:1', '64:ff9b::8.8.8.8', '64:ff9b::ffff:ffff'], []],
  ['64:ff9b:1::/48', ['64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff'], []],
  ['100::/64', ['100::', '100::ffff:ffff:ffff:ffff'], []],
  ['100:0:0:1::/64', ['100:0:0:1::', '100::1:ffff:ffff:ffff:ffff'], []],
  ['2001::/23', ['2001:100::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff'], ['2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '2001:200::']],
  ['2001::/32', ['2001::', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:1::1/128', ['2001:1::1'], []],
  ['2001:1::2/128', ['2001:1::2'], []],
  ['2001:1::3/128', ['2001:1::3'], []],
  ['2001:2::/48', ['2001:2::', '2001:2:0:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:3::/32', ['2001:3::', '2001:3:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:4:112::/48', ['2001:4:112::', '2001:4:112:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:10::/28', ['2001:10::', '2001:1f:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:20::/28', ['2001:20::', '2001:2f:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:30::/28', ['2001:30::', '2001:3f:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['2001:db8::/32', ['2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'], ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db9::']],
  ['2002::/16', ['2002::', '2002:7f00:1::', '2002:808:808::1', '2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], ['2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '2003::']],
  ['2620:4f:8000::/48', ['2620:4f:8000::', '2620:4f:8000:ffff:ffff:ffff:ffff:ffff'], ['2620:4f:7fff:ffff:ffff:ffff:ffff:ffff', '2620:4f:8001::']],
  ['3fff::/20', ['3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff'], ['3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '3fff:1000::']],
  ['5f00::/16', ['5f00::', '5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['fc00::/7', ['fc00::', 'fd00:ec2::254', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['fe80::/10', ['fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  // Deprecated forms and multicast, beside the registry.
  ['::/96', ['::2', '::7f00:1', '::8.8.8.8', '::255.255.255.255'], []],
  ['fec0::/10', ['fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], []],
  ['ff00::/8', ['ff00::', 'ff02::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], []],
];

/** Public addresses well away from any range. */
const PUBLIC = ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:81c::200e'];

/** The refusal of an address refused for `why`. */
const sentence = (why: string): RegExp => new RegExp(`^must not point at an? ${why.replace(/[()]/g, '\\$&')} address$`);

const urlOf = (address: string): string => `https://${isIP(address) === 6 ? `[${address}]` : address}/push/x`;

t.test('the guard refuses every range listed here, and this list names every range the guard has', async (t) => {
  t.same(new Set([...IPV4_RANGES, ...IPV6_RANGES].map(([cidr]) => cidr)), new Set(RANGES.map(([cidr]) => cidr)));
});

t.test('an address in each range is refused, by address and as a Web Push or webhook URL', async (t) => {
  for (const [range, inside] of RANGES) {
    for (const address of inside) {
      const why = refusedAddress(address);
      t.type(why, 'string', `${address} (${range}) refused: ${why}`);
      const expected = sentence(why ?? '?');
      t.match(refusedUrl(strict, 'webpush', urlOf(address)), expected, `webpush ${urlOf(address)}`);
      t.match(refusedUrl(strict, 'webhook', urlOf(address)), expected, `webhook ${urlOf(address)}`);
      t.match(refusedUrl(strict, 'webhook', urlOf(address).replace('https:', 'http:')), expected, 'over http too');
      t.equal(refusedUrl(local, 'webhook', urlOf(address)), undefined, 'OUTBOUND_ALLOW_PRIVATE lifts it');
    }
  }
});

t.test('the public addresses next to each range, and well-known public ones, are allowed', async (t) => {
  const allowed = [...RANGES.flatMap(([, , outside]) => outside), ...PUBLIC];
  for (const address of allowed) {
    t.equal(refusedAddress(address), undefined, `${address} allowed`);
    t.equal(refusedUrl(strict, 'webpush', urlOf(address)), undefined, `webpush ${urlOf(address)}`);
    t.equal(refusedUrl(strict, 'webhook', urlOf(address)), undefined, `webhook ${urlOf(address)}`);
  }
});

t.test('the refusals read as sentences', async (t) => {
  const cases: [string, string][] = [
    ['https://198.18.0.1/', 'must not point at a benchmarking address'],
    ['https://[64:ff9b::7f00:1]/', 'must not point at an IPv4-embedding NAT64 address'],
    ['https://[2002:a9fe:a9fe::]/', 'must not point at an IPv4-embedding 6to4 address'],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'must not point at an IPv4-embedding Teredo address'],
    ['https://[::7f00:1]/', 'must not point at an IPv4-compatible address'],
    ['https://[::ffff:127.0.0.1]/', 'must not point at an IPv4-mapped address'],
    ['https://[fd00:ec2::254]/', 'must not point at a unique-local address'],
    ['https://192.0.2.10/', 'must not point at a documentation address'],
    ['https://[4000::1]/', 'must not point at a reserved address'],
    ['https://255.255.255.255/', 'must not point at a broadcast address'],
  ];
  for (const [url, why] of cases) t.equal(refusedUrl(strict, 'webhook', url), why, url);
});

t.test('IPv6 outside global unicast 2000::/3 is refused even where no range names it', async (t) => {
  for (const address of ['::1:0:0:0', '::ffff:0:808:808', '1::', '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '4000::1', 'fe00::1']) {
    t.equal(refusedAddress(address), 'reserved', address);
  }
  t.equal(refusedAddress('2000::1'), undefined, 'the start of 2000::/3');
  t.equal(refusedAddress('3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'), undefined, 'its end');
});

t.test('addresses in any spelling; what is no address is refused', async (t) => {
  t.equal(refusedAddress('FE80::1'), 'link-local', 'uppercase');
  t.equal(refusedAddress('fe80::1%eth0'), 'link-local', 'with a zone');
  t.equal(refusedAddress('0:0:0:0:0:0:0:1'), 'loopback', 'uncompressed');
  t.equal(refusedAddress('::FFFF:7F00:1'), 'IPv4-mapped', 'mapped, in hex');
  t.equal(refusedAddress('2001:db8::1.2.3.4'), 'documentation', 'a dotted tail elsewhere');
  t.equal(refusedAddress('2606:4700:4700:0:0:0:0:1111'), undefined, 'public, uncompressed');
  for (const junk of ['', 'localhost', '127.1', '1.2.3.4%eth0', '[::1]', '::1::']) t.equal(refusedAddress(junk), 'unrecognised', JSON.stringify(junk));
});

t.test('every IPv4 spelling the URL parser accepts is refused as the address it names', async (t) => {
  const cases: [string, string][] = [
    ['https://2130706433/', 'loopback'],
    ['https://0177.0.0.1/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://127.1/', 'loopback'],
    ['https://0x7f000001/', 'loopback'],
    ['https://017700000001/', 'loopback'],
    ['https://127.0.0.1./', 'loopback'],
    ['https://%31%32%37.0.0.1/', 'loopback'],
    ['https://\uff11\uff12\uff17.0.0.1/', 'loopback'],
    ['https://0/', 'unspecified'],
    ['https://0xa9.0xfe.0xa9.0xfe/', 'link-local or metadata'],
    ['https://3232235777/', 'private'],
    ['https://198.18.1/', 'benchmarking'],
    ['https://[::FFFF:127.0.0.1]/', 'IPv4-mapped'],
    ['https://[0:0:0:0:0:0:0:1]/', 'loopback'],
    ['https://[FE80::1]/', 'link-local'],
    ['https://[64:FF9B::127.0.0.1]/', 'IPv4-embedding NAT64'],
  ];
  for (const [url, why] of cases) {
    for (const use of ['webpush', 'webhook'] as const) t.match(refusedUrl(strict, use, url), sentence(why), `${use} ${url}`);
  }
  // A zone names an interface of this host: the URL parser refuses it.
  t.equal(refusedUrl(strict, 'webhook', 'https://[fe80::1%25eth0]/'), 'is not a URL');
  // Names (a trailing dot included) go on to resolution, where the lookup checks what they resolve to.
  t.equal(refusedUrl(strict, 'webhook', 'https://localhost./'), undefined);
  t.equal(refusedUrl(strict, 'webhook', 'https://127.0.0.1.example.com/'), undefined);
});

/** guardedLookup over a resolver that answers `answers` for every name. */
async function lookupWith(answers: LookupAddress[]): Promise<ReturnType<typeof guardedLookup>> {
  const fake = (_host: string, _options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void): void => {
    setImmediate(() => callback(null, answers));
  };
  const mocked = await t.mockImport<typeof import('../../engine/infra/outbound/guard.ts')>('../../engine/infra/outbound/guard.ts', { 'node:dns': { lookup: fake } });
  return mocked.guardedLookup(strict);
}

function resolve(lookup: ReturnType<typeof guardedLookup>, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[] }> {
  if (lookup === undefined) throw new Error('a strict policy has a lookup');
  return new Promise((done) => lookup('receiver.example.com', { all }, (err, address) => done({ err, address })));
}

t.test('at connection time, resolved addresses in every range are dropped; public ones are kept', async (t) => {
  const refused = RANGES.flatMap(([, inside]) => inside).map((address): LookupAddress => ({ address, family: isIP(address) }));
  const none = await resolve(await lookupWith(refused), true);
  t.equal(none.err?.code, 'EOUTBOUND_REFUSED', 'every address refused: the connection fails');
  t.match(none.err?.message, /^receiver\.example\.com resolves only to refused addresses: 0\.0\.0\.1 \(unspecified\), /);
  t.match(none.err?.message, /64:ff9b::7f00:1 \(IPv4-embedding NAT64\)/);

  const mixed = await lookupWith([...refused, { address: '198.51.100.7', family: 4 }, { address: '8.8.8.8', family: 4 }, { address: '2606:4700:4700::1111', family: 6 }]);
  const all = await resolve(mixed, true);
  t.equal(all.err, null);
  t.same(all.address, [{ address: '8.8.8.8', family: 4 }, { address: '2606:4700:4700::1111', family: 6 }], 'only the public addresses are kept');
  const one = await resolve(mixed, false);
  t.same([one.err, one.address], [null, '8.8.8.8'], 'a single answer is the first public address');
});
