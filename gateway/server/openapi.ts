import { ErrorCodes } from '../../schemas/errors.ts';
import { declaredAnswers } from './answers.ts';
import { paramNames, type Route } from './route.ts';

/**
 * The OpenAPI 3.1 document of a route table, served at /api/openapi.json: the
 * same declarations the gateway registers and validates with, so the two cannot drift.
 */
export function openApiDocument(routes: readonly Route[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method] = operation(route);
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
      },
      paths,
    }),
  ) as Record<string, unknown>;
}

const retryAfter = { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } };
const allow = { description: 'The methods the path takes', schema: { type: 'string' } };

function operation(route: Route): Record<string, unknown> {
  const parameters: unknown[] = [];
  if (route.kind === 'http') {
    for (const name of paramNames(route.path)) parameters.push({ name, in: 'path', required: true, schema: route.params?.properties[name] ?? { type: 'string' } });
  }
  if (route.query) {
    const required = new Set(route.query.required ?? []);
    for (const [name, schema] of Object.entries(route.query.properties)) parameters.push({ name, in: 'query', required: required.has(name), schema });
  }
  if (route.identityHeader) {
    parameters.push({
      name: 'X-Identity-Hash',
      in: 'header',
      required: false,
      description: 'HMAC-SHA256(identity secret, external_id), lowercase hex; required when identity verification is on',
      schema: { type: 'string' },
    });
  }
  const responses: Record<string, unknown> = {};
  for (const a of declaredAnswers(route)) {
    const headers = a.status === 429 || a.status === 503 ? { 'Retry-After': retryAfter } : a.status === 405 ? { Allow: allow } : null;
    responses[a.status] = {
      description: a.codes.length > 0 ? a.codes.join(' or ') : describe(a.status),
      ...(headers ? { headers } : {}),
      content: Object.fromEntries(a.contentTypes.map((type) => [type, { schema: a.schema }])),
    };
  }
  const body = route.kind === 'http' ? route.body : undefined;
  return {
    operationId: operationId(route),
    summary: route.summary,
    // On every operation, so a viewer's "Authorize" sends the key (as `Authorization: Bearer`) where it is needed.
    security: route.auth === 'none' ? [] : route.auth === 'rest' ? [{ restKey: [] }] : [{ sdkOrRestKey: [] }],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body.schema } } } } : {}),
    responses,
  };
}

/**
 * `getSegmentsIdCount` for GET /api/segments/{id}/count: unique per method and path, and without
 * `_`, which Swagger UI's deep links (`/api/docs#/default/<id>`) no longer take.
 */
export function operationId(route: Route): string {
  const words = route.path.split(/[^A-Za-z0-9]+/).filter((w, i) => w !== '' && !(i === 1 && w === 'api'));
  return route.method + words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
}

function describe(status: number): string {
  if (status === 101) return 'Switching Protocols: the WebSocket is open';
  if (status === 202) return 'Accepted: durably appended to the ingest log';
  return status === 201 ? 'Created' : 'OK';
}
