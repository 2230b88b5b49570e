import type { Config } from '../../../schemas/config.ts';
import { FrequencyCapBounds, type FrequencyCap } from '../../../schemas/notifications.ts';
import type { Channel } from '../../../schemas/outcomes.ts';
import { RateLimitBounds, type RateLimit } from '../../../engine/state/keys/keystore.ts';
import { isTimeZone } from '../../../engine/infra/process/local-time.ts';
import { UsageError } from '../usage.ts';
import { withKeystore } from './admin.ts';

/** What `engine project create` does: prints the project's id, keys and identity secret. */
export async function createProject(config: Config, name: string, identityVerification: boolean, json: boolean): Promise<number> {
  const created = await withKeystore(config, (ks) => ks.createProject(name, identityVerification));
  if (json) console.log(JSON.stringify(created));
  else for (const [k, v] of Object.entries(created)) console.log(`${k}: ${v}`);
  return 0;
}

/** The settings `engine project update` was given; undefined ones stay as they are. */
export interface ProjectUpdate {
  identity: 'on' | 'off' | undefined;
  rate: string | undefined;
  burst: number | undefined;
  timezone: string | undefined;
  cap: string | undefined;
  delivered: 'on' | 'off' | undefined;
}

/** What `engine project update` does: one setting or more. */
export async function updateProject(config: Config, id: string, { identity, rate, burst, timezone, cap, delivered }: ProjectUpdate): Promise<number> {
  const limit = rateLimitOption(rate, burst);
  const frequency = cap === undefined ? undefined : frequencyCapOption(cap);
  if (identity === undefined && limit === undefined && timezone === undefined && frequency === undefined && delivered === undefined) {
    throw new UsageError('project update needs --identity-verification, --rate-limit, --timezone, --frequency-cap or --web-delivered-receipts');
  }
  if (timezone !== undefined && !isTimeZone(timezone)) throw new UsageError(`--timezone must be an IANA time zone (Europe/Paris) or an offset from UTC (+05:30), got "${timezone}"`);
  const found = await withKeystore(
    config,
    async (ks) =>
      (identity === undefined || (await ks.setIdentityVerification(id, identity === 'on'))) &&
      (limit === undefined || (await ks.setRateLimit(id, limit))) &&
      (timezone === undefined || (await ks.setTimeZone(id, timezone))) &&
      (frequency === undefined || (await ks.setFrequencyCap(id, frequency.channels, frequency.cap))) &&
      (delivered === undefined || (await ks.setWebDeliveredReceipts(id, delivered === 'on'))),
  );
  if (!found) {
    console.error(`engine: unknown project ${id}`);
    return 1;
  }
  if (identity !== undefined) console.log(`identity verification ${identity} for project ${id}`);
  if (limit !== undefined) console.log(`rate limit ${limit ? `${limit.per_second}/s per key, burst ${limit.burst}` : 'off'} for project ${id}`);
  if (delivered !== undefined) console.log(`web delivered receipts ${delivered} for project ${id}`);
  if (timezone !== undefined) console.log(`time zone ${timezone} for project ${id}`);
  if (frequency !== undefined) {
    const what = frequency.cap === null ? 'off' : `${frequency.cap.max} per ${frequency.cap.hours} h per user`;
    console.log(`frequency cap ${what} for ${frequency.channels.join(', ')} of project ${id}`);
  }
  return 0;
}

/** `--rate-limit` with `--burst`: the limit to store, null to remove it, undefined when not asked. */
function rateLimitOption(rate: string | undefined, burst: number | undefined): RateLimit | null | undefined {
  if (rate === undefined || rate === 'off') {
    if (burst !== undefined) throw new UsageError('--burst goes with --rate-limit <per-second>');
    return rate === undefined ? undefined : null;
  }
  const { per_second: rates, burst: bursts } = RateLimitBounds;
  const perSecond = Number(rate);
  if (!/^\d+(\.\d+)?$/.test(rate) || perSecond < rates.min || perSecond > rates.max) {
    throw new UsageError(`--rate-limit must be off or calls a second from ${rates.min} to ${rates.max}, got "${rate}"`);
  }
  const limit = { per_second: perSecond, burst: burst ?? Math.ceil(perSecond) };
  if (limit.burst < bursts.min || limit.burst > bursts.max) throw new UsageError(`--burst must be from ${bursts.min} to ${bursts.max}, got ${limit.burst}`);
  return limit;
}

const CHANNELS: Record<string, Channel> = { push: 'PUSH', email: 'EMAIL', sms: 'SMS' };

/** `--frequency-cap [<channel>:]<n>/<hours>h|off`: the channels it sets and the cap, null to remove. */
function frequencyCapOption(value: string): { channels: Channel[]; cap: FrequencyCap | null } {
  const m = /^(?:(push|email|sms):)?(?:off|(\d+)\/(\d+)h)$/i.exec(value.trim());
  const { max: n, hours: h } = FrequencyCapBounds;
  const max = Number(m?.[2]);
  const hours = Number(m?.[3]);
  const bad = m === null || (m[2] !== undefined && (max < n.min || max > n.max || hours < h.min || hours > h.max));
  if (bad) {
    throw new UsageError(`--frequency-cap must be [push:|email:|sms:]<n>/<hours>h (n from ${n.min} to ${n.max}, hours from ${h.min} to ${h.max}) or [channel:]off, got "${value}"`);
  }
  const named = m[1] === undefined ? undefined : CHANNELS[m[1].toLowerCase()];
  return { channels: named === undefined ? Object.values(CHANNELS) : [named], cap: m[2] === undefined ? null : { max, hours } };
}
