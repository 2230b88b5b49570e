import { readFileSync } from 'node:fs';
import type { PushMessage } from '../../../actors/dispatch/providers/provider.ts';
import type { SimRequest, Simulators } from '../../../simulators/index.ts';

/** A message with every field set; override what a test is about. */
export function message(over: Partial<PushMessage> = {}): PushMessage {
  return {
    notificationId: 'n-1',
    title: 'Hello',
    body: 'World',
    data: { svc_message_id: 'm-1', deep_link: '/inbox', count: 3 },
    priority: 'high',
    ttlSeconds: 3600,
    collapseId: 'inbox',
    subtitle: null,
    options: {},
    ...over,
  };
}

/** A 64-hex-digit APNs device token that ends with `n`. */
export const deviceToken = (n: number): string => n.toString(16).padStart(64, 'a');

export const caOf = (sims: Simulators): string => readFileSync(sims.caFile, 'utf8');

/** Requests whose path contains `part`. */
export const on = (requests: SimRequest[], part: string): SimRequest[] => requests.filter((r) => r.path.includes(part));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
