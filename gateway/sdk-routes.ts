import type { TemplatedApp } from 'uWebSockets.js';
import type { ErrorItem } from '../schemas/errors.ts';
import type { IngestEntry } from '../schemas/ingest.ts';
import type { SdkOp } from '../schemas/sdk.ts';
import { identityOk, type Caller } from './auth.ts';
import type { GatewayDeps } from './context.ts';
import { eventEntry, identifyEntry, opEntry, receiptEntry, subscribeEntry, tagsEntry } from './entries.ts';
import { bodyRoute, pathParam, RouteMetric, type Exchange, type RequestInfo } from './http.ts';
import type { Checked } from './validation.ts';

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
 * one per operation) and is answered 202 once the entries are durable, 503 when that fails.
 */
export function registerSdkRoutes(app: TemplatedApp, deps: GatewayDeps): void {
  const { validators: v } = deps;
  const metric = (path: string): RouteMetric => new RouteMetric(deps.metrics.requests, path);
  const accept = (ex: Exchange, entries: IngestEntry[], answer: string): void => {
    deps.ingest.write(entries).then(
      () => {
        deps.metrics.acceptedWrites.inc(entries.length);
        ex.send(202, answer);
      },
      (err: unknown) => {
        deps.tracker.redisFailed('ingest append', err);
        ex.unavailable();
      },
    );
  };
  /** A single-entry write: schema errors 400, identity 401, else append. */
  const single = <T>(ex: Exchange, checked: Checked<T>, caller: Caller, externalId: (b: T) => string, hash: (b: T) => string | undefined, entry: (b: T, at: number) => IngestEntry): void => {
    if (!checked.ok) return ex.fail('validation_failed', checked.errors);
    const body = checked.value;
    if (!identityOk(caller, externalId(body), hash(body))) return ex.fail('identity_verification_failed');
    accept(ex, [entry(body, Date.now())], ACCEPTED);
  };
  const sdk = { restOnly: false, limit: SDK_LIMIT };

  app.post(
    sdkRoutes.users.path,
    bodyRoute(deps, {
      ...sdk,
      metric: metric(sdkRoutes.users.path),
      hasParam: false,
      handle: (ex, caller, body) =>
        single(ex, v.identify(body), caller, (b) => b.external_id, (b) => b.identity_hash, (b, at) => identifyEntry(caller.project, b, at)),
    }),
  );

  /** A write whose user is named by the path (`/users/{external_id}/...`); the hash comes in X-Identity-Hash. */
  const byPathUser =
    <T>(check: (body: unknown) => Checked<T>, entry: (project: string, externalId: string, b: T, at: number) => IngestEntry) =>
    (ex: Exchange, caller: Caller, body: unknown, info: RequestInfo): void => {
      const id = pathParam(info.param, 'external_id');
      const checked = check(body);
      if (!id.ok || !checked.ok) return ex.fail('validation_failed', errorsOf(id, checked));
      single(ex, checked, caller, () => id.value, () => info.identityHash || undefined, (b, at) => entry(caller.project, id.value, b, at));
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
      handle: (ex, caller, body, info) =>
        single(ex, v.event(body), caller, (b) => b.external_id, () => info.identityHash || undefined, (b, at) => eventEntry(caller.project, b, at)),
    }),
  );

  app.post(
    sdkRoutes.receipts.path,
    bodyRoute(deps, {
      ...sdk,
      metric: metric(sdkRoutes.receipts.path),
      hasParam: false,
      handle: (ex, caller, body, info) =>
        single(ex, v.receipt(body), caller, (b) => b.external_id, () => info.identityHash || undefined, (b, at) => receiptEntry(caller.project, b, at)),
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
        const checked = v.batchBody(body);
        if (!checked.ok) return ex.fail('validation_failed', checked.errors);
        const denied = identityFailures(caller, checked.value);
        if (denied.length > 0) return ex.fail('identity_verification_failed', denied);
        const at = Date.now();
        const entries = checked.value.map((op) => opEntry(caller.project, op, at));
        accept(ex, entries, `{"accepted":true,"count":${entries.length}}`);
      },
    }),
  );
}

/** Per-operation identity check of a batch: one error per failing operation, naming its index. */
export function identityFailures(caller: Caller, ops: SdkOp[]): ErrorItem[] {
  const out: ErrorItem[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (op !== undefined && !identityOk(caller, op.external_id, op.identity_hash)) {
      out.push({
        code: 'identity_verification_failed',
        message: `operations/${i}/identity_hash: missing or does not match external_id`,
        path: `/operations/${i}/identity_hash`,
      });
    }
  }
  return out;
}

function errorsOf(id: Checked<string>, body: Checked<unknown>): ErrorItem[] {
  return [...(id.ok ? [] : id.errors), ...(body.ok ? [] : body.errors)];
}
