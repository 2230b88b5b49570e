import { Ajv } from 'ajv';
import { ConfigSchema, type Config } from '../../../schemas/config.ts';

/** A configuration value that fails its schema; the message names the variable. */
export class ConfigError extends Error {}

/**
 * Reads the configuration from the environment once, fills defaults, checks every value against
 * ConfigSchema and freezes the result. Unknown variables are ignored; bad values throw ConfigError.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(ConfigSchema.properties)) {
    const value = env[name];
    if (value !== undefined && value !== '') raw[name] = value;
  }
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true });
  const validate = ajv.compile<Config>(ConfigSchema);
  if (!validate(raw)) {
    const problems = (validate.errors ?? []).map((e) => {
      const name = e.instancePath.slice(1) || String(e.params['additionalProperty'] ?? '');
      return `${name}=${JSON.stringify(raw[name] ?? '')}: ${e.message ?? 'invalid'}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const config = raw as unknown as Config;
  if (config.ADMISSION_LOW_PERCENT >= config.ADMISSION_HIGH_PERCENT) {
    throw new ConfigError(
      `invalid configuration: ADMISSION_LOW_PERCENT=${config.ADMISSION_LOW_PERCENT}: must be below ADMISSION_HIGH_PERCENT (${config.ADMISSION_HIGH_PERCENT})`,
    );
  }
  if (config.SQL_CLICKHOUSE_URL !== undefined && config.CLICKHOUSE_URL === undefined) {
    throw new ConfigError('invalid configuration: SQL_CLICKHOUSE_URL is set without CLICKHOUSE_URL: the embedded engine has no server users');
  }
  return Object.freeze(config);
}
