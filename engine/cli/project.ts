import { RateLimitBounds, type RateLimit } from '../keystore.ts';
import { withKeystore } from './admin.ts';
import { defineCommand } from './command.ts';
import { UsageError } from './usage.ts';

/** `engine project create <name>`. */
export const projectCreate = defineCommand({
  path: ['project', 'create'],
  args: [{ name: 'name' }],
  options: {
    'identity-verification': { kind: 'flag', help: 'SDK-key calls that name a user must carry identity_hash (default: off)' },
    json: { kind: 'flag', help: 'print one JSON object instead of "field: value" lines' },
  },
  summary: 'Creates a project; prints project_id, sdk_key, rest_key and identity_secret (keys are shown once).',
  run: async (config, { args, options }) => {
    const created = await withKeystore(config, (ks) => ks.createProject(args.name, options['identity-verification'] === true));
    if (options.json) console.log(JSON.stringify(created));
    else for (const [k, v] of Object.entries(created)) console.log(`${k}: ${v}`);
    return 0;
  },
});

/** `engine project update <project_id>`: one setting or more. */
export const projectUpdate = defineCommand({
  path: ['project', 'update'],
  args: [{ name: 'project_id' }],
  options: {
    'identity-verification': { kind: 'string', choices: ['on', 'off'], help: 'turn identity verification on or off' },
    'rate-limit': {
      kind: 'string',
      value: '<per-second>|off',
      help: 'calls a second each key of the project may make (a token bucket per key), or off (the default)',
    },
    burst: { kind: 'integer', value: '<n>', help: 'calls a key may make at once under --rate-limit (default: the rate, rounded up)' },
  },
  summary: "Changes a project's settings; every gateway follows within KEY_CACHE_MS.",
  run: async (config, { args, options }) => {
    const id = args.project_id;
    const identity = options['identity-verification'];
    const limit = rateLimitOption(options['rate-limit'], options.burst);
    if (identity === undefined && limit === undefined) throw new UsageError('project update needs --identity-verification or --rate-limit');
    const found = await withKeystore(
      config,
      async (ks) => (identity === undefined || (await ks.setIdentityVerification(id, identity === 'on'))) && (limit === undefined || (await ks.setRateLimit(id, limit))),
    );
    if (!found) {
      console.error(`engine: unknown project ${id}`);
      return 1;
    }
    if (identity !== undefined) console.log(`identity verification ${identity} for project ${id}`);
    if (limit !== undefined) console.log(`rate limit ${limit ? `${limit.per_second}/s per key, burst ${limit.burst}` : 'off'} for project ${id}`);
    return 0;
  },
});

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
