import type { Config } from '../../schemas/config.ts';
import type { ErrorItem } from '../../schemas/errors.ts';
import { BatchAccepted, BatchRequest, type SdkOp } from '../../schemas/sdk.ts';
import { ErrorList } from '../../engine/infra/validation/ajv-errors.ts';
import { CallerError } from '../../schemas/errors.ts';
import { accept } from '../ingest/accept.ts';
import { refusedEndpoint } from '../ingest/endpoints.ts';
import { opEntry } from '../ingest/entries.ts';
import { identityOk } from '../ingest/identity.ts';
import { checkBatch } from '../ingest/sdk-checks.ts';
import type { Caller } from '../server/auth.ts';
import { httpRoute } from '../server/route.ts';

export const sdkBatch = httpRoute({
  method: 'post',
  path: '/api/sdk/batch',
  auth: 'sdk',
  summary: '1 to 1000 operations, all or nothing (buffered)',
  body: { schema: BatchRequest, limit: 1024 * 1024, check: checkBatch },
  answers: { 202: BatchAccepted },
  errors: ['identity_verification_failed', 'overloaded'],
  handler:
    ({ deps }) =>
    ({ ex, caller, body: ops }) => {
      const refused = refusedEndpoints(deps.config, ops);
      if (refused.length > 0) throw new CallerError('validation_failed', refused);
      const denied = identityFailures(caller, ops);
      if (denied.length > 0) throw new CallerError('identity_verification_failed', denied);
      const at = Date.now();
      const entries = ops.map((op) => opEntry(caller.project, op, at));
      return accept(deps, ex, entries, `{"accepted":true,"count":${entries.length}}`);
    },
});

/** Web Push endpoints the outbound guard refuses, naming each operation's index (at most MAX_ERROR_ITEMS listed). */
function refusedEndpoints(config: Config, ops: SdkOp[]): ErrorItem[] {
  const list = new ErrorList();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    const item = op?.op === 'subscribe' ? refusedEndpoint(config, op, `/operations/${i}/token`) : undefined;
    if (item) list.add([item]);
  }
  return list.result('/operations', 'operations');
}

/** Per-operation identity check of a batch: one error per failing operation, naming its index (at most MAX_ERROR_ITEMS listed). */
function identityFailures(caller: Caller, ops: SdkOp[]): ErrorItem[] {
  const list = new ErrorList();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (op === undefined || identityOk(caller, op.external_id, op.identity_hash)) continue;
    const path = `/operations/${i}/identity_hash`;
    list.add([{ code: 'identity_verification_failed', message: `${path.slice(1)}: missing or does not match external_id`, path }]);
  }
  return list.result('/operations', 'operations');
}
