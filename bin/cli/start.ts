import { RoleNames, type RoleFactory, type RoleName } from '../../engine/infra/runner/roles.ts';
import { defineCommand, type Command } from './command.ts';
import { UsageError } from './usage.ts';

/** `engine start`, offering the roles this build has (`available`, in RoleNames order). */
export function startCommand(available: Partial<Record<RoleName, RoleFactory>>): Command {
  const built = RoleNames.filter((r) => available[r]);
  return defineCommand({
    path: ['start'],
    args: [],
    options: {
      roles: { kind: 'string', value: built.join(','), help: `the roles to run, comma-separated (default: all of ${built.join(', ')})` },
      port: { kind: 'integer', value: '<port>', help: 'the HTTP port of the gateway role; 0 picks a free one (default: PORT, 8080)' },
    },
    summary: 'Runs the given roles in this process until SIGTERM or SIGINT.',
    run: async (config, { options }) => {
      const { port } = options;
      if (port !== undefined && port > 65535) throw new UsageError(`--port must be a number up to 65535, got ${port}`);
      const names = selectRoles(options.roles, available);
      return (await import('./actions/start.ts')).runRoles(Object.freeze({ ...config, ...(port === undefined ? {} : { PORT: port }) }), names, available);
    },
  });
}

function selectRoles(arg: string | undefined, available: Partial<Record<RoleName, RoleFactory>>): RoleName[] {
  const built = RoleNames.filter((r) => available[r]);
  if (arg === undefined) return built;
  const asked = arg.split(',').map((s) => s.trim()).filter(Boolean);
  for (const name of asked) {
    if (!(RoleNames as readonly string[]).includes(name)) throw new UsageError(`unknown role "${name}" (roles: ${RoleNames.join(', ')})`);
    if (!available[name as RoleName]) throw new UsageError(`role "${name}" is not part of this version (available: ${built.join(', ')})`);
  }
  if (asked.length === 0) throw new UsageError('--roles needs at least one role');
  return asked as RoleName[];
}
