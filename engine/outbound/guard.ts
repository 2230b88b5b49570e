import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { Config } from '../../schemas/config.ts';

/**
 * The one guard for URLs a caller chooses and the engine connects to (Web Push endpoints, webhook
 * receivers): docs/api.md#outbound-urls. An address is refused when it is loopback, private,
 * link-local (cloud metadata lives there), shared (carrier-grade NAT), unspecified or multicast,
 * unless OUTBOUND_ALLOW_PRIVATE is set for local simulators.
 */

/** Why an address is refused, by range (IPv4-mapped IPv6 addresses are checked as IPv4). */
const RANGES: [string, string, number, 'ipv4' | 'ipv6'][] = [
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  ['shared (carrier-grade NAT)', '100.64.0.0', 10, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  ['link-local or metadata', '169.254.0.0', 16, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['multicast or reserved', '224.0.0.0', 3, 'ipv4'],
  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  ['unique-local', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6'],
];

const blocks = RANGES.map(([why, net, prefix, family]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, family);
  return { why, list };
});

const MAPPED_V4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** Why `address` (an IP literal) may not be connected to, or undefined when it may. */
export function refusedAddress(address: string): string | undefined {
  const mapped = MAPPED_V4.exec(address)?.[1];
  const ip = mapped ?? address;
  const family = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
  return blocks.find(({ list }) => list.check(ip, family))?.why;
}

/** The error a connection refused by the guard fails with. */
export class OutboundRefusedError extends Error {
  readonly code = 'EOUTBOUND_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefusedError';
  }
}

export interface OutboundPolicy {
  /** OUTBOUND_ALLOW_PRIVATE: loopback and private addresses are allowed (local simulators). */
  allowPrivate: boolean;
  /** WEBPUSH_HOSTS: when set, the only hosts (exact, or `.suffix`) a Web Push endpoint may name. */
  webPushHosts: readonly string[] | undefined;
}

type OutboundConfig = Pick<Config, 'OUTBOUND_ALLOW_PRIVATE' | 'WEBPUSH_HOSTS'>;

/** Read once per config: the gateway asks for it on every Web Push registration. */
const policies = new WeakMap<OutboundConfig, OutboundPolicy>();

export function outboundPolicy(config: OutboundConfig): OutboundPolicy {
  let policy = policies.get(config);
  if (policy === undefined) {
    const hosts = config.WEBPUSH_HOSTS?.split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean);
    policy = { allowPrivate: config.OUTBOUND_ALLOW_PRIVATE, webPushHosts: hosts && hosts.length > 0 ? hosts : undefined };
    policies.set(config, policy);
  }
  return policy;
}

/** What a URL is for: Web Push endpoints are https only and may be held to WEBPUSH_HOSTS. */
export type OutboundUse = 'webpush' | 'webhook';

/**
 * Why `url` is refused before any name is resolved: its scheme, credentials in it, a literal
 * address the policy refuses, or a host off the Web Push allowlist; undefined when it may go on
 * to resolution.
 */
export function refusedUrl(policy: OutboundPolicy, use: OutboundUse, url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL';
  }
  const schemes = use === 'webpush' ? ['https:'] : ['https:', 'http:'];
  if (!schemes.includes(parsed.protocol)) return `must be an ${schemes.map((s) => s.slice(0, -1)).join(' or ')} URL`;
  if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials';
  const host = parsed.hostname.toLowerCase();
  if (use === 'webpush' && policy.webPushHosts && !policy.webPushHosts.some((allowed) => hostMatches(host, allowed))) {
    return `host ${host} is not on WEBPUSH_HOSTS`;
  }
  if (policy.allowPrivate) return undefined;
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(literal) === 0) return undefined;
  const why = refusedAddress(literal);
  return why === undefined ? undefined : `must not point at ${/^[aeiou]/.test(why) ? 'an' : 'a'} ${why} address`;
}

function hostMatches(host: string, allowed: string): boolean {
  return allowed.startsWith('.') ? host.endsWith(allowed) : host === allowed;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for sockets (net.connect, tls.connect, undici's connect options) that drops every
 * resolved address the policy refuses and fails when none is left. Checked when the connection
 * is made, so a name that resolves elsewhere later (DNS rebinding) is caught too. Literal
 * addresses never reach a lookup: refusedUrl checks them.
 */
export function guardedLookup(policy: OutboundPolicy): LookupFunction | undefined {
  if (policy.allowPrivate) return undefined;
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const kept = addresses.filter((a) => refusedAddress(a.address) === undefined);
      if (kept.length === 0) {
        const why = addresses.map((a) => `${a.address} (${refusedAddress(a.address) ?? 'refused'})`).join(', ');
        return callback(new OutboundRefusedError(`${hostname} resolves only to refused addresses: ${why}`), []);
      }
      if (options.all === true) return callback(null, kept);
      const first = kept[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  };
  return lookup as LookupFunction;
}
