import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Config } from '../../../schemas/config.ts';
import { IPV4_RANGES, IPV6_GLOBAL_UNICAST, IPV6_RANGES, type Range } from './special-ranges.ts';

/**
 * The one guard for URLs a caller chooses and the engine connects to (Web Push endpoints, webhook
 * receivers): docs/api.md#outbound-urls. An address is refused when it falls in any
 * special-purpose range (engine/infra/outbound/special-ranges.ts: loopback, private, link-local and
 * metadata, shared, documentation, benchmarking, multicast, reserved, every IPv6 form that embeds
 * an IPv4 address, ...), unless OUTBOUND_ALLOW_PRIVATE is set for local simulators.
 */

/** An address as a number of `bits` bits. */
interface Ip {
  bits: 32 | 128;
  value: bigint;
}

const ipv4Value = (ip: string): bigint => ip.split('.').reduce((n, part) => (n << 8n) | BigInt(part), 0n);

/** `address` as a number; undefined when it is no IP address. An IPv6 zone (`%eth0`) is dropped. */
function parseIp(address: string): Ip | undefined {
  const ip = address.includes(':') ? address.replace(/%.*$/s, '') : address;
  const family = isIP(ip);
  if (family === 4) return { bits: 32, value: ipv4Value(ip) };
  if (family !== 6) return undefined;
  // isIP has checked the syntax: a trailing dotted quad is two groups, `::` the groups left out.
  const quad = /(?<=:)\d+\.\d+\.\d+\.\d+$/.exec(ip)?.[0];
  const v4 = quad === undefined ? 0n : ipv4Value(quad);
  const hex = quad === undefined ? ip : `${ip.slice(0, -quad.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  const [head = '', tail] = hex.split('::');
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? before : [...before, ...Array<string>(8 - before.length - after.length).fill('0'), ...after];
  return { bits: 128, value: all.reduce((n, group) => (n << 16n) | BigInt(`0x${group}`), 0n) };
}

interface Block extends Ip {
  prefix: number;
  why: string;
}

function block([cidr, why]: Range): Block {
  const [net = '', prefix = ''] = cidr.split('/');
  const ip = parseIp(net);
  if (ip === undefined) throw new Error(`not a range: ${cidr}`);
  return { ...ip, prefix: Number(prefix), why };
}

/** Most specific first, so an address gets the words of the narrowest range it is in. */
const BLOCKS = [...IPV4_RANGES, ...IPV6_RANGES].map(block).sort((a, b) => b.prefix - a.prefix);
const GLOBAL_UNICAST = block([IPV6_GLOBAL_UNICAST, '']);

function contains(range: Block, ip: Ip): boolean {
  const host = BigInt(range.bits - range.prefix);
  return range.bits === ip.bits && ip.value >> host === range.value >> host;
}

/**
 * Why `address` (an IP literal) may not be connected to, or undefined when it may. What is not an
 * IP address is refused too: the guard never allows what it cannot read.
 */
export function refusedAddress(address: string): string | undefined {
  const ip = parseIp(address);
  if (ip === undefined) return 'unrecognised';
  const range = BLOCKS.find((b) => contains(b, ip));
  if (range !== undefined) return range.why;
  if (ip.bits === 128 && !contains(GLOBAL_UNICAST, ip)) return 'reserved';
  return undefined;
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
  // new URL() has already turned every IPv4 spelling (2130706433, 0177.0.0.1, 0x7f.1, 127.1,
  // 127.0.0.1.) into a dotted quad and IPv6 into lowercase hex: what is not an IP here is a name.
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(literal) === 0) return undefined;
  const why = refusedAddress(literal);
  return why === undefined ? undefined : `must not point at ${/^(?:[aeio]|u(?!ni))/i.test(why) ? 'an' : 'a'} ${why} address`;
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
