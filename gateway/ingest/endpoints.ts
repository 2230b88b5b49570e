import { outboundPolicy, refusedUrl } from '../../engine/infra/outbound/guard.ts';
import type { Config } from '../../schemas/config.ts';
import type { ErrorItem } from '../../schemas/errors.ts';

/**
 * Web Push endpoints are URLs the dispatch role connects to, registered with the SDK key that ships
 * in apps: one naming a refused address literally, or off WEBPUSH_HOSTS, is a 400 at the request
 * that brings it (docs/api.md#outbound-urls). Names are checked again at each send.
 */
export function refusedEndpoint(config: Config, sub: { type?: string; token?: string }, path: string): ErrorItem | undefined {
  if (sub.type !== 'WEB_PUSH' || sub.token === undefined) return undefined;
  const why = refusedUrl(outboundPolicy(config), 'webpush', sub.token);
  return why === undefined ? undefined : { code: 'validation_failed', message: `${path.slice(1)}: ${why}`, path };
}
