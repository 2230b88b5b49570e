import type { Static } from 'typebox';
import { DefaultBaseUrls, ProviderCredentials, type ProviderName } from '../../../schemas/providers.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { ProjectKeys } from './redis-keys.ts';
import { compile } from '../../infra/validation/validator.ts';

export type Credentials = Static<(typeof ProviderCredentials)[ProviderName]>;

const validators = Object.fromEntries(
  Object.entries(ProviderCredentials).map(([name, schema]) => [name, compile(schema)]),
) as Record<ProviderName, ReturnType<typeof compile>>;

/** Why a credential file was refused: one line per problem, each naming its field. */
export class InvalidCredentials extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** Checks a parsed credential file against its provider's schema and fills the default base_url. */
export function checkCredentials(provider: ProviderName, value: unknown): Credentials {
  const validate = validators[provider];
  if (!validate(value)) {
    throw new InvalidCredentials(
      (validate.errors ?? []).map((e) => {
        const field = e.keyword === 'required' ? `${e.instancePath}/${String(e.params['missingProperty'])}` : e.instancePath || '/';
        const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params['additionalProperty'])})` : '';
        return `${field}: ${e.message ?? 'invalid'}${extra}`;
      }),
    );
  }
  const creds = value as Credentials;
  if (provider === 'webpush' || 'base_url' in creds) return creds;
  const sandbox = provider === 'apns' && 'environment' in creds && creds.environment === 'sandbox';
  return { ...creds, base_url: sandbox ? 'https://api.sandbox.push.apple.com' : (DefaultBaseUrls[provider] ?? '') };
}

/** Provider credentials of each project, one JSON value per provider. */
export class ProviderStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  async set(projectId: string, provider: ProviderName, credentials: Credentials): Promise<void> {
    await this.redis.hset(this.topology.own(ProjectKeys).providers(projectId), provider, JSON.stringify(credentials));
  }

  async get(projectId: string, provider: ProviderName): Promise<Credentials | null> {
    const raw = await this.redis.hget(this.topology.own(ProjectKeys).providers(projectId), provider);
    return raw === null ? null : (JSON.parse(raw) as Credentials);
  }

  /** Every provider's credentials of a project as stored (provider to JSON text), for a reader that compares them. */
  async all(projectId: string): Promise<Record<string, string>> {
    return this.redis.hgetall(this.topology.own(ProjectKeys).providers(projectId));
  }
}
