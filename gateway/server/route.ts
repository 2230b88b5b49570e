import type { Static, TObject, TSchema } from 'typebox';
import { ErrorCodes, type ErrorCode } from '../../schemas/errors.ts';
import type { Caller } from './auth.ts';
import type { Checked } from './checked.ts';
import type { GatewayDeps } from './deps.ts';
import type { Exchange } from './exchange.ts';
import type { SocketChannel } from './socket.ts';

/**
 * A route of the gateway is one declaration: method, path, auth, the schemas of what it takes and
 * of every answer, and its handler or channel. Registration on the server, validation, 404/405,
 * CORS and /api/openapi.json are all derived from the table of them (gateway/routes/table.ts).
 */

export type Method = 'get' | 'post' | 'put' | 'delete';
/** Who may call: any project key, a REST key only (docs/api.md#keys-and-projects), or anyone. */
export type Auth = 'sdk' | 'rest' | 'none';
/** The auth of a route that takes a key. */
export type KeyAuth = Exclude<Auth, 'none'>;

/** A request body: its schema (documented, and validated unless `check` replaces it) and size limit in bytes. */
export interface BodySpec<S extends TSchema, B> {
  schema: S;
  limit: number;
  /** A check one schema cannot say (a union picked by `type`, a list checked entry by entry), compiled once at start. */
  check?: (value: unknown) => Checked<B>;
}

/** A success answer: its schema and, when not JSON, its media type, or the list it may be any of (a file route). */
export interface AnswerSpec {
  schema: TSchema;
  contentType?: string | readonly string[];
}

export type SuccessStatus = 101 | 200 | 201 | 202 | 204;

/** Everything a handler gets, already checked against the route's schemas. */
export interface Call<A extends Auth, P, Q, B> {
  ex: Exchange;
  caller: A extends 'none' ? null : Caller;
  params: P;
  query: Q;
  body: B;
  /** `X-Identity-Hash`, undefined when absent. */
  identityHash: string | undefined;
}

export type Handle<A extends Auth, P, Q, B> = (call: Call<A, P, Q, B>) => void | Promise<void>;

/** What a handler factory gets once, at registration: the process's dependencies and the whole table. */
export interface Setup {
  deps: GatewayDeps;
  routes: readonly Route[];
}

interface Declared {
  path: string;
  summary: string;
  /** Success answers, by status. */
  answers: Partial<Record<SuccessStatus, TSchema | AnswerSpec>>;
  /** Error codes the handler itself answers with; those of auth, body and parameters are derived (routeErrors). */
  errors?: readonly ErrorCode[];
  /** Takes `X-Identity-Hash` (docs/api.md#keys-and-projects). */
  identityHeader?: boolean;
}

export interface HttpRouteDecl<A extends Auth, P extends TObject, Q extends TObject, S extends TSchema, B> extends Declared {
  method: Method;
  auth: A;
  params?: P;
  query?: Q;
  body?: BodySpec<S, B>;
  /** Builds the handler once per process. */
  handler(setup: Setup): Handle<A, Static<P>, Static<Q>, B>;
}

/** An HTTP route with its types erased, as the table holds it. */
export interface HttpRoute extends Declared {
  kind: 'http';
  method: Method;
  auth: Auth;
  params?: TObject;
  query?: TObject;
  body?: BodySpec<TSchema, unknown>;
  handler(setup: Setup): Handle<Auth, unknown, unknown, unknown>;
}

export interface SocketRouteDecl<Q extends TObject, D> extends Declared {
  /** Any project key unless `rest`. */
  auth?: KeyAuth;
  query?: Q;
  /** Builds the channel once per process. */
  channel(setup: Setup): SocketChannel<Static<Q>, D>;
}

/** A WebSocket route, as the table holds it: an upgrade on GET, checked as an HTTP call is (key, rate limit, query), then frames. */
export interface SocketRoute extends Declared {
  kind: 'websocket';
  method: 'get';
  auth: KeyAuth;
  query?: TObject;
  channel(setup: Setup): SocketChannel<unknown, unknown>;
}

export type Route = HttpRoute | SocketRoute;

/** Declares an HTTP route; the handler's call is typed from the schemas. */
export function httpRoute<A extends Auth, P extends TObject = TObject, Q extends TObject = TObject, S extends TSchema = TSchema, B = Static<S>>(
  decl: HttpRouteDecl<A, P, Q, S, B>,
): HttpRoute {
  return { kind: 'http', ...decl } as HttpRoute;
}

/** Declares a WebSocket route; the channel's upgrade gets the query typed from its schema. */
export function socketRoute<Q extends TObject = TObject, D = unknown>(decl: SocketRouteDecl<Q, D>): SocketRoute {
  return { kind: 'websocket', method: 'get', auth: 'sdk', ...decl } as SocketRoute;
}

/** Every error code a route may answer with: its own, and those its auth, body and parameters bring. */
export function routeErrors(route: Route): ErrorCode[] {
  const codes = new Set<ErrorCode>(['method_not_allowed', 'internal']);
  if (route.auth !== 'none') for (const c of ['missing_key', 'invalid_key', 'rate_limited', 'unavailable'] as const) codes.add(c);
  if (route.auth === 'rest') codes.add('wrong_key_type');
  if (route.kind === 'http' && route.body) for (const c of ['invalid_json', 'validation_failed', 'payload_too_large', 'unsupported_media_type'] as const) codes.add(c);
  if ((route.kind === 'http' && route.params) || route.query) codes.add('validation_failed');
  // A plain GET without an upgrade on a WebSocket path.
  if (route.kind === 'websocket') codes.add('validation_failed');
  // An empty path segment matches no route: `/api/sdk/users//tags` is not found.
  if (paramNames(route.path).length > 0) codes.add('not_found');
  for (const c of route.errors ?? []) codes.add(c);
  return Object.keys(ErrorCodes).filter((c): c is ErrorCode => codes.has(c as ErrorCode));
}

/** The success answers of a route, each with its schema and media types. */
export function successAnswers(route: Route): [SuccessStatus, { schema: TSchema; contentTypes: readonly string[] }][] {
  return Object.entries(route.answers).map(([status, a]) => {
    const spec: AnswerSpec = 'schema' in a ? (a as AnswerSpec) : { schema: a };
    const types = spec.contentType ?? 'application/json';
    return [Number(status) as SuccessStatus, { schema: spec.schema, contentTypes: typeof types === 'string' ? [types] : types }];
  });
}

/** The names of the path's parameters, in order. */
export function paramNames(path: string): string[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
}
