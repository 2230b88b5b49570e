/**
 * The flags of bench/broadcast.ts, checked: who the broadcast goes to (users, push types,
 * audience), where the pushes go (the simulators, or the minimal peer), how the engine is deployed
 * (dispatch processes, a Redis Cluster of the run's own) and what the ceiling sends.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { root } from './paths.ts';

/** The subscription type of each --types name. */
export const TYPE_NAMES = { ios: 'IOS_PUSH', android: 'ANDROID_PUSH', web: 'WEB_PUSH' } as const;
export type TypeName = keyof typeof TYPE_NAMES;
const isTypeName = (name: string): name is TypeName => Object.hasOwn(TYPE_NAMES, name);

/** The simulator (and credential file) of each push type. */
export const PROVIDER_OF = { ios: 'apns', android: 'fcm', web: 'webpush' } as const satisfies Record<TypeName, string>;

export interface BroadcastOptions {
  users: number;
  types: TypeName[];
  audience: 'all' | 'ids';
  /** --peer minimal: the pushes go to bench/h2-peer.ts rather than the simulators. */
  peer: boolean;
  /** Where the pushes go, as the report names it. */
  providerName: 'peer' | 'simulator';
  dispatchProcesses: number;
  /** Every role but dispatch in the main engine process, dispatch in processes of its own. */
  split: boolean;
  /** Nodes of the Redis Cluster the run starts, or 0 for REDIS_URL. */
  clusterNodes: number;
  /** Pushes each ceiling run sends. */
  ceilingCount: number;
  /** --ceiling-connections and --ceiling-inflight as given, for bench/apns-ceiling.ts. */
  ceilingConnections: string | undefined;
  ceilingInflight: string | undefined;
  engineRoot: string;
  /** No dist/ build under engineRoot: the engine runs its sources. */
  fromSource: boolean;
  cpuProf: string | undefined;
  /** --node-flags as given, for the engine processes' node. */
  nodeFlags: string;
  /** --keep: the work directory is left in place. */
  keep: boolean;
  out: string | undefined;
  /** --peer as given, for the report's settings. */
  peerFlag: string | undefined;
  /** --against-release: the release of releases.json (bench/release.ts) broadcasts too, after this tree. */
  againstRelease: boolean;
}

export function parseOptions(): BroadcastOptions {
  const { values } = parseArgs({
    options: {
      users: { type: 'string', default: '200000' },
      types: { type: 'string', default: 'ios,android,web' },
      out: { type: 'string' },
      audience: { type: 'string', default: 'all' },
      'ceiling-count': { type: 'string' },
      'ceiling-connections': { type: 'string' },
      'ceiling-inflight': { type: 'string' },
      'engine-root': { type: 'string', default: root },
      'cpu-prof': { type: 'string' },
      'node-flags': { type: 'string', default: '' },
      'dispatch-processes': { type: 'string', default: '0' },
      cluster: { type: 'string', default: '0' },
      keep: { type: 'boolean', default: false },
      peer: { type: 'string' },
      'against-release': { type: 'boolean', default: false },
    },
  });
  const dispatchProcesses = Number(values['dispatch-processes']);
  if (!Number.isInteger(dispatchProcesses) || dispatchProcesses < 0) throw new Error(`--dispatch-processes must be a whole number, got ${values['dispatch-processes']}`);
  const clusterNodes = Number(values.cluster);
  if (!Number.isInteger(clusterNodes) || (clusterNodes !== 0 && clusterNodes < 3)) throw new Error(`--cluster takes a number of nodes, at least 3, got ${values.cluster}`);
  const users = Number(values.users);
  if (!Number.isInteger(users) || users < 1) throw new Error(`--users must be a whole number, got ${values.users}`);
  const audience = values.audience;
  if (audience !== 'all' && audience !== 'ids') throw new Error('--audience must be all or ids');
  const typeNames = values.types.split(',').map((t) => t.trim());
  const types = typeNames.filter(isTypeName);
  if (types.length === 0 || types.length !== typeNames.length || new Set(types).size !== types.length) throw new Error(`--types takes distinct names among ios, android, web, got ${values.types}`);
  if (values.peer !== undefined && values.peer !== 'minimal') throw new Error(`--peer takes minimal, got ${values.peer}`);
  const peer = values.peer === 'minimal';
  if (peer && (types.length !== 1 || types[0] !== 'ios')) throw new Error('--peer minimal sends APNs pushes only: use --types ios');
  const engineRoot = resolve(values['engine-root']);
  return {
    users,
    types,
    audience,
    peer,
    providerName: peer ? 'peer' : 'simulator',
    dispatchProcesses,
    split: dispatchProcesses > 0,
    clusterNodes,
    ceilingCount: Number(values['ceiling-count'] ?? users),
    ceilingConnections: values['ceiling-connections'],
    ceilingInflight: values['ceiling-inflight'],
    engineRoot,
    fromSource: !existsSync(join(engineRoot, 'dist/bin/main.js')),
    cpuProf: values['cpu-prof'],
    nodeFlags: values['node-flags'],
    keep: values.keep,
    out: values.out,
    peerFlag: values.peer,
    againstRelease: values['against-release'],
  };
}

/** The push type of user i: the --types in rotation. */
export function typeOf(options: BroadcastOptions, i: number): TypeName {
  return options.types[i % options.types.length] ?? 'ios';
}

/** How many of `count` go to the k-th of the --types: an even share, the first ones one more. */
export function shareOf(options: BroadcastOptions, count: number, k: number): number {
  return Math.floor(count / options.types.length) + (k < count % options.types.length ? 1 : 0);
}
