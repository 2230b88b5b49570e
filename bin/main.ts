/**
 * Composition root of the `engine` command: wires the roles of every room into the CLI of engine/.
 */
import { applyRole } from '../actors/partition/role.ts';
import { recorderRole } from '../actors/recorder/role.ts';
import { runCli } from '../engine/cli/main.ts';
import { gatewayRole } from '../gateway/role.ts';

process.exit(await runCli(process.argv.slice(2), { gateway: gatewayRole, apply: applyRole, recorder: recorderRole }));
