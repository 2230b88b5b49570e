import type { RoleFactory, RoleName } from '../../engine/infra/runner/roles.ts';
import type { Command } from './command.ts';
import { keysCreate, keysList, keysRevoke } from './keys.ts';
import { migrateCommand } from './migrate.ts';
import { projectCreate, projectUpdate } from './project.ts';
import { providersSet } from './providers.ts';
import { sqlCommand } from './sql.ts';
import { startCommand } from './start.ts';
import { templatesCreate, templatesDelete, templatesList } from './templates.ts';
import { webhooksCreate, webhooksDelete, webhooksGet, webhooksList } from './webhooks.ts';

/**
 * Every command of `engine` (docs/configuration.md#the-engine-command), in the order the usage
 * lists them; each file declares its own commands (./command.ts) and parsing and help derive from
 * them. What a command does is in ./actions/, imported when it runs, so help loads none of it.
 */
export function commandTable(roles: Partial<Record<RoleName, RoleFactory>>): readonly Command[] {
  return [startCommand(roles), projectCreate, projectUpdate, keysCreate, keysList, keysRevoke, providersSet, templatesCreate, templatesList, templatesDelete, webhooksCreate, webhooksList, webhooksGet, webhooksDelete, migrateCommand, sqlCommand];
}
