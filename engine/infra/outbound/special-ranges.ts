/**
 * The address ranges the outbound guard refuses (docs/api.md#outbound-urls), each with the words
 * its refusal gives ("must not point at a <why> address").
 *
 * Data: every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890;
 * iana-ipv4-special-registry and iana-ipv6-special-registry), as published on 2025-10-09, the
 * IPv6 registry's last update. Every entry is refused, the few the registries mark globally
 * reachable too: those are anycast services (AS112, AMT, PCP, TURN), identifier spaces (ORCHIDv2,
 * drone remote ID) or NAT64, never a push service or a webhook receiver. Added to the registries:
 * multicast (its own registries), the deprecated IPv4-compatible `::/96` and site-local
 * `fec0::/10`. An IPv6 address outside global unicast 2000::/3 (IANA IPv6 Address Space) that no
 * entry names is refused as reserved, so a later assignment there is never allowed by default.
 *
 * Every form that embeds an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) is refused
 * whole, whatever the IPv4 address: none is a way to name a public receiver, and checking the
 * embedded address instead would trust the network's translators.
 */

export type Range = readonly [cidr: string, why: string];

export const IPV4_RANGES: readonly Range[] = [
  ['0.0.0.0/8', 'unspecified'],
  ['0.0.0.0/32', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared (carrier-grade NAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local or metadata'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignment'],
  ['192.0.0.0/29', 'IPv4 service continuity (DS-Lite)'],
  ['192.0.0.8/32', 'IPv4 dummy'],
  ['192.0.0.9/32', 'anycast (Port Control Protocol)'],
  ['192.0.0.10/32', 'anycast (TURN)'],
  ['192.0.0.170/32', 'NAT64 discovery'],
  ['192.0.0.171/32', 'NAT64 discovery'],
  ['192.0.2.0/24', 'documentation'],
  ['192.31.196.0/24', 'anycast (AS112 DNS)'],
  ['192.52.193.0/24', 'anycast (AMT)'],
  ['192.88.99.0/24', 'anycast (6to4 relay, deprecated)'],
  ['192.88.99.2/32', 'anycast (6a44 relay)'],
  ['192.168.0.0/16', 'private'],
  ['192.175.48.0/24', 'anycast (AS112 DNS)'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'broadcast'],
];

export const IPV6_RANGES: readonly Range[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible'],
  ['::ffff:0:0/96', 'IPv4-mapped'],
  ['64:ff9b::/96', 'IPv4-embedding NAT64'],
  ['64:ff9b:1::/48', 'IPv4-embedding local NAT64'],
  ['100::/64', 'discard-only'],
  ['100:0:0:1::/64', 'dummy'],
  ['2001::/23', 'IETF protocol assignment'],
  ['2001::/32', 'IPv4-embedding Teredo'],
  ['2001:1::1/128', 'anycast (Port Control Protocol)'],
  ['2001:1::2/128', 'anycast (TURN)'],
  ['2001:1::3/128', 'anycast (DNS-SD registration)'],
  ['2001:2::/48', 'benchmarking'],
  ['2001:3::/32', 'anycast (AMT)'],
  ['2001:4:112::/48', 'anycast (AS112 DNS)'],
  ['2001:10::/28', 'ORCHID (deprecated)'],
  ['2001:20::/28', 'ORCHIDv2 identifier'],
  ['2001:30::/28', 'drone remote ID'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', 'IPv4-embedding 6to4'],
  ['2620:4f:8000::/48', 'anycast (AS112 DNS)'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'segment routing (SRv6)'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
];

/** IPv6 global unicast: an address outside it that no range above names is refused as reserved. */
export const IPV6_GLOBAL_UNICAST = '2000::/3';
