/**
 * Composition root of the `engine` command: wires the roles of every room into the CLI of engine/.
 * Each role's modules load only when `start` runs it, so the other commands (and help) do not pay
 * for the HTTP server, Redis, ClickHouse and provider clients they never use.
 */
import { runCli } from './cli/main.ts';

process.exit(await runCli(process.argv.slice(2), {
    gateway: async (ctx) => (await import('../gateway/role.ts')).gatewayRole(ctx),
    apply: async (ctx) => (await import('../actors/partition/role.ts')).applyRole(ctx),
    fanout: async (ctx) => (await import('../actors/fanout/role.ts')).fanoutRole(ctx),
    dispatch: async (ctx) => (await import('../actors/dispatch/role.ts')).dispatchRole(ctx),
    recorder: async (ctx) => (await import('../actors/recorder/role.ts')).recorderRole(ctx),
    scheduler: async (ctx) => (await import('../actors/scheduler/role.ts')).schedulerRole(ctx),
    webhooks: async (ctx) => (await import('../actors/webhooks/role.ts')).webhooksRole(ctx),
    sql: async (ctx) => (await import('../gateway/sql/role.ts')).sqlRole(ctx),
  }));
