import Type, { type TObject, type TSchema } from 'typebox';
import { ErrorCodes } from './errors.ts';
import {
  Accepted,
  BatchAccepted,
  BatchLimits,
  ConsentAnswer,
  ConsentBody,
  EventBody,
  IdentifyBody,
  IdentifyOp,
  EventOp,
  ReceiptBody,
  ReceiptOp,
  SubscribeOpByType,
  SubscriptionBody,
  TagsBody,
  TagsOp,
} from './sdk.ts';
import { UserView } from './users.ts';
import { DeliveriesPage, DeliveriesQuery, DeliveryStats, DeliveryStatsQuery, EventsPage, EventsQuery } from './queries.ts';
import { Segment, SegmentBody, SegmentCount, SegmentList } from './segments.ts';

/**
 * The OpenAPI 3.1 document of the built routes, generated from the same TypeBox schemas the gateway
 * compiles into validators (API.md section 7). Served at /api/openapi.json.
 */
const ErrorBody = Type.Object({
  errors: Type.Array(
    Type.Object({
      code: Type.Union(Object.keys(ErrorCodes).map((c) => Type.Literal(c))),
      message: Type.String(),
      path: Type.Optional(Type.String()),
      error_id: Type.Optional(Type.String({ description: 'internal only: marks the server log line with the stack' })),
    }),
  ),
});

type Status = keyof typeof statusText;
const statusText = {
  101: 'Switching Protocols: the WebSocket is open',
  200: 'OK',
  201: 'Created',
  202: 'Accepted: durably appended to the ingest log',
  400: 'invalid_json or validation_failed',
  401: 'missing_key, invalid_key or identity_verification_failed',
  403: 'wrong_key_type',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'idempotency_conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: "rate_limited: over the project's per-key rate limit",
  500: 'internal: a bug; the body carries an error_id',
  503: 'unavailable',
} as const;

interface Operation {
  summary: string;
  body?: TSchema;
  ok: [Status, TSchema];
  errors: Status[];
  pathParam?: boolean;
  /** Name of the path parameter (default external_id). */
  pathName?: string;
  identityHeader?: boolean;
  /** Query parameters: each property of the object schema, required when the schema says so. */
  query?: TObject;
  auth?: 'sdk' | 'rest' | 'none';
  /** Media type of the success answer (default application/json). */
  contentType?: string;
}

const bodyErrors: Status[] = [400, 401, 413, 415, 503];

const retryAfter = { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } };

const operations: Record<string, Record<string, Operation>> = {
  '/api/sdk/users': {
    post: { summary: 'Create or identify a user, merge tags (buffered)', body: IdentifyBody, ok: [202, Accepted], errors: bodyErrors },
  },
  '/api/sdk/users/{external_id}/subscriptions': {
    post: {
      summary: 'Register a subscription (buffered)',
      body: SubscriptionBody,
      ok: [202, Accepted],
      errors: bodyErrors,
      pathParam: true,
      identityHeader: true,
    },
  },
  '/api/sdk/users/{external_id}/tags': {
    put: { summary: 'Merge tags; "" or null deletes (buffered)', body: TagsBody, ok: [202, Accepted], errors: bodyErrors, pathParam: true, identityHeader: true },
  },
  '/api/sdk/events': {
    post: { summary: 'Track an event (buffered)', body: EventBody, ok: [202, Accepted], errors: bodyErrors, identityHeader: true },
  },
  '/api/sdk/receipts': {
    post: { summary: 'Report a delivery receipt (buffered)', body: ReceiptBody, ok: [202, Accepted], errors: bodyErrors, identityHeader: true },
  },
  '/api/sdk/batch': {
    post: {
      summary: '1 to 1000 operations, all or nothing (buffered)',
      body: Type.Object({
        operations: Type.Array(Type.Union([IdentifyOp, ...Object.values(SubscribeOpByType), TagsOp, EventOp, ReceiptOp]), BatchLimits),
      }, { additionalProperties: false }),
      ok: [202, BatchAccepted],
      errors: bodyErrors,
    },
  },
  '/api/sdk/opt-out': {
    post: { summary: 'Opt a user out of a subscription type (synchronous)', body: ConsentBody, ok: [200, ConsentAnswer], errors: bodyErrors, identityHeader: true },
  },
  '/api/sdk/opt-in': {
    post: { summary: 'Lift an opt-out (synchronous)', body: ConsentBody, ok: [200, ConsentAnswer], errors: bodyErrors, identityHeader: true },
  },
  '/api/users/{external_id}': {
    get: { summary: 'The applied state of a user', ok: [200, UserView], errors: [401, 403, 404, 503], pathParam: true, auth: 'rest' },
  },
  '/api/deliveries': {
    get: {
      summary: 'Delivery records, newest first; follow next_cursor for the next page',
      ok: [200, DeliveriesPage],
      errors: [400, 401, 403, 503],
      query: DeliveriesQuery,
      auth: 'rest',
    },
  },
  '/api/deliveries/stats': {
    get: { summary: 'Delivery record counts per group_by value', ok: [200, DeliveryStats], errors: [400, 401, 403, 503], query: DeliveryStatsQuery, auth: 'rest' },
  },
  '/api/events': {
    get: { summary: 'Tracked events, newest first; follow next_cursor for the next page', ok: [200, EventsPage], errors: [400, 401, 403, 503], query: EventsQuery, auth: 'rest' },
  },
  '/api/segments': {
    post: { summary: 'Create a segment (a second one of the same name is 409)', body: SegmentBody, ok: [201, Segment], errors: [...bodyErrors, 403, 409], auth: 'rest' },
    get: { summary: 'Every segment, All included, sorted by name', ok: [200, SegmentList], errors: [401, 403, 503], auth: 'rest' },
  },
  '/api/segments/{name}': {
    get: { summary: 'One segment', ok: [200, Segment], errors: [400, 401, 403, 404, 503], pathParam: true, pathName: 'name', auth: 'rest' },
    delete: {
      summary: 'Delete a segment (All cannot be deleted: 400); answers the deleted segment',
      ok: [200, Segment],
      errors: [400, 401, 403, 404, 503],
      pathParam: true,
      pathName: 'name',
      auth: 'rest',
    },
  },
  '/api/segments/{name}/count': {
    get: { summary: 'The current number of users in a segment', ok: [200, SegmentCount], errors: [400, 401, 403, 404, 503], pathParam: true, pathName: 'name', auth: 'rest' },
  },
  '/api/sdk/ws': {
    get: {
      summary:
        'WebSocket channel (API.md section 3.2): key in Authorization or as subprotocol bearer.<key>; each text frame is one batch operation plus `seq`, answered with {seq, accepted} or {seq, errors}',
      ok: [101, Type.Object({ seq: Type.Union([Type.Integer(), Type.Null()]), accepted: Type.Optional(Type.Literal(true)) })],
      errors: [400, 401],
    },
  },
  '/healthz': { get: { summary: 'The process runs', ok: [200, Type.Object({ ok: Type.Boolean() })], errors: [], auth: 'none' } },
  '/readyz': { get: { summary: 'Redis and ClickHouse answer', ok: [200, Type.Object({ ok: Type.Boolean() })], errors: [503], auth: 'none' } },
  '/metrics': { get: { summary: 'Prometheus text format', ok: [200, Type.String()], errors: [], auth: 'none', contentType: 'text/plain' } },
  '/api/docs': { get: { summary: 'This reference, interactive', ok: [200, Type.String()], errors: [], auth: 'none', contentType: 'text/html' } },
  '/api/openapi.json': { get: { summary: 'This document', ok: [200, Type.Object({})], errors: [], auth: 'none' } },
};

function operation(op: Operation): Record<string, unknown> {
  const parameters: unknown[] = [];
  if (op.pathParam) parameters.push({ name: op.pathName ?? 'external_id', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 128 } });
  if (op.query) {
    const required = new Set(op.query.required ?? []);
    for (const [name, schema] of Object.entries(op.query.properties)) parameters.push({ name, in: 'query', required: required.has(name), schema });
  }
  if (op.identityHeader) {
    parameters.push({
      name: 'X-Identity-Hash',
      in: 'header',
      required: false,
      description: 'HMAC-SHA256(identity secret, external_id), lowercase hex; required when identity verification is on',
      schema: { type: 'string' },
    });
  }
  const responses: Record<string, unknown> = {
    [op.ok[0]]: { description: statusText[op.ok[0]], content: { [op.contentType ?? 'application/json']: { schema: op.ok[1] } } },
  };
  // Every keyed call may meet the project's rate limit (API.md section 9).
  const limited: Status[] = op.auth === 'none' ? [] : [429];
  for (const status of [...op.errors, ...limited, 405 as const, 500 as const]) {
    responses[status] = {
      description: statusText[status],
      ...(status === 429 ? { headers: { 'Retry-After': retryAfter } } : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return {
    summary: op.summary,
    ...(op.auth === 'none' ? { security: [] } : op.auth === 'rest' ? { security: [{ restKey: [] }] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: op.body } } } } : {}),
    responses,
  };
}

export function openApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, methods] of Object.entries(operations)) {
    paths[path] = Object.fromEntries(Object.entries(methods).map(([method, op]) => [method, operation(op)]));
  }
  return JSON.parse(
    JSON.stringify({
      openapi: '3.1.0',
      info: {
        title: 'Messaging engine API',
        version,
        description: `Error codes: ${Object.entries(ErrorCodes)
          .map(([code, e]) => `${code} (${e.status})`)
          .join(', ')}.`,
      },
      servers: [{ url: '/' }],
      security: [{ sdkOrRestKey: [] }],
      components: {
        securitySchemes: {
          sdkOrRestKey: { type: 'http', scheme: 'bearer', description: 'SDK key or REST key' },
          restKey: { type: 'http', scheme: 'bearer', description: 'REST key' },
        },
        schemas: { Error: ErrorBody },
      },
      paths,
    }),
  ) as Record<string, unknown>;
}
