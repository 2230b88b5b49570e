/**
 * Composition root of the `engine` command: wires the roles of every room into the CLI of engine/.
 */
import { dispatchRole } from '../actors/dispatch/role.ts';
import { fanoutRole } from '../actors/fanout/role.ts';
import { applyRole } from '../actors/partition/role.ts';
import { recorderRole } from '../actors/recorder/role.ts';
import { schedulerRole } from '../actors/scheduler/role.ts';
import { runCli } from '../engine/cli/main.ts';
import { gatewayRole } from '../gateway/role.ts';

process.exit(await runCli(process.argv.slice(2), {
    gateway: gatewayRole,
    apply: applyRole,
    fanout: fanoutRole,
    dispatch: dispatchRole,
    recorder: recorderRole,
    scheduler: schedulerRole,
  }));
