import type { TemplatedApp } from 'uWebSockets.js';
import { ErrorList } from '../engine/ajv-errors.ts';
import { CallerError, type ErrorItem } from '../schemas/errors.ts';
import type { IngestEntry } from '../schemas/ingest.ts';
import type { SdkOp } from '../schemas/sdk.ts';
import { identityOk, type Caller } from './auth.ts';
import type { GatewayDeps } from './context.ts';
import { eventEntry, identifyEntry, opEntry, receiptEntry, subscribeEntry, tagsEntry } from './entries.ts';
import { bodyRoute, pathParam, RouteMetric, type Exchange, type RequestInfo } from './http.ts';
import { valid, type Checked } from './validation.ts';

const SDK_LIMIT = 64 * 1024;
const BATCH_LIMIT = 1024 * 1024;
const ACCEPTED = '{"accepted":true}';

/** Path and allowed methods of every buffered SDK route (for the 405 table). */
export const sdkRoutes = {
  users: { path: '/api/sdk/users', allow: 'POST' },
  subscriptions: { path: '/api/sdk/users/:external_id/subscriptions', allow: 'POST' },
  tags: { path: '/api/sdk/users/:external_id/tags', allow: 'PUT' },
  events: { path: '/api/sdk/events', allow: 'POST' },
  receipts: { path: '/api/sdk/receipts', allow: 'POST' },
  batch: { path: '/api/sdk/batch', allow: 'POST' },
} as const;

/**
 * The buffered SDK writes of API.md section 3: each checked body becomes one ingest entry (a batch,
 * one per operation) and is answered 202 once the entries are durable; a failed append is
 * answered by its kind (503 when neither Redis nor the spill journal can take it).
 */
export function registerSdkRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  const { validators: v } = deps;
  const metric = (path: string): RouteMetric => new RouteMetric(deps.metrics.requests, path);
  const accept = async (ex: Exchange, entries: IngestEntry[], answer: string): Promise<void> => {
    await deps.ingest.write(entries);
    deps.metrics.acceptedWrites.inc(entries.length);
    ex.send(202, answer);
  };
  /** A single-entry write of a checked body: identity 401, else append. */
  const single = (ex: Exchange, caller: Caller, externalId: string, hash: string | undefined, entry: (at: number) => IngestEntry): Promise<void> => {
    if (!identityOk(caller, externalId, hash)) throw new CallerError('identity_verification_failed');
    return accept(ex, [entry(Date.now())], ACCEPTED);
  };
  const sdk = { restOnly: false, limit: SDK_LIMIT };

  app.post(
    sdkRoutes.users.path,
    bodyRoute(deps, {
      ...sdk,
      metric: metric(sdkRoutes.users.path),
      hasParam: false,
      handle: (ex, caller, body) => {
        const b = valid(v.identify(body));
        return single(ex, caller, b.external_id, b.identity_hash, (at) => identifyEntry(caller.project, b, at));
      },
    }),
  );

  /** A write whose user is named by the path (`/users/{external_id}/...`); the hash comes in X-Identity-Hash. */
  const byPathUser =
    <T>(check: (body: unknown) => Checked<T>, entry: (project: string, externalId: string, b: T, at: number) => IngestEntry) =>
    (ex: Exchange, caller: Caller, body: unknown, info: RequestInfo): Promise<void> => {
      const id = pathParam(info.param, 'external_id');
      const checked = check(body);
      if (!id.ok || !checked.ok) throw new CallerError('validation_failed', errorsOf(id, checked));
      const b = checked.value;
      return single(ex, caller, id.value, info.identityHash || undefined, (at) => entry(caller.project, id.value, b, at));
    };

  app.post(
    sdkRoutes.subscriptions.path,
    bodyRoute(deps, { ...sdk, metric: metric(sdkRoutes.subscriptions.path), hasParam: true, handle: byPathUser((b) => v.subscription(b), subscribeEntry) }),
  );

  app.put(
    sdkRoutes.tags.path,
    bodyRoute(deps, { ...sdk, metric: metric(sdkRoutes.tags.path), hasParam: true, handle: byPathUser(v.tags, tagsEntry) }),
  );

  app.post(
    sdkRoutes.events.path,
    bodyRoute(deps, {
      ...sdk,
      metric: metric(sdkRoutes.events.path),
      hasParam: false,
      handle: (ex, caller, body, info) => {
        const b = valid(v.event(body));
        return single(ex, caller, b.external_id, info.identityHash || undefined, (at) => eventEntry(caller.project, b, at));
      },
    }),
  );

  app.post(
    sdkRoutes.receipts.path,
    bodyRoute(deps, {
      ...sdk,
      metric: metric(sdkRoutes.receipts.path),
      hasParam: false,
      handle: (ex, caller, body, info) => {
        const b = valid(v.receipt(body));
        return single(ex, caller, b.external_id, info.identityHash || undefined, (at) => receiptEntry(caller.project, b, at));
      },
    }),
  );

  app.post(
    sdkRoutes.batch.path,
    bodyRoute(deps, {
      restOnly: false,
      limit: BATCH_LIMIT,
      metric: metric(sdkRoutes.batch.path),
      hasParam: false,
      handle: (ex, caller, body) => {
        const ops = valid(v.batchBody(body));
        const denied = identityFailures(caller, ops);
        if (denied.length > 0) throw new CallerError('identity_verification_failed', denied);
        const at = Date.now();
        const entries = ops.map((op) => opEntry(caller.project, op, at));
        return accept(ex, entries, `{"accepted":true,"count":${entries.length}}`);
      },
    }),
  );
}

/** Per-operation identity check of a batch: one error per failing operation, naming its index (at most MAX_ERROR_ITEMS listed). */
export function identityFailures(caller: Caller, ops: SdkOp[]): ErrorItem[] {
  const list = new ErrorList();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (op === undefined || identityOk(caller, op.external_id, op.identity_hash)) continue;
    const path = `/operations/${i}/identity_hash`;
    list.add([{ code: 'identity_verification_failed', message: `${path.slice(1)}: missing or does not match external_id`, path }]);
  }
  return list.result('/operations', 'operations');
}

function errorsOf(id: Checked<string>, body: Checked<unknown>): ErrorItem[] {
  return [...(id.ok ? [] : id.errors), ...(body.ok ? [] : body.errors)];
}
