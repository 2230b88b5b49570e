import { admitted, guarded, lookUpCaller } from './admission.ts';
import { authorizationKey, type Caller } from './auth.ts';
import { readJsonBody, type BodyResult } from './body.ts';
import { Exchange, type RouteAnswers } from './exchange.ts';
import { requestCheck, type RawRequest } from './request-check.ts';
import { paramNames, type HttpRoute, type Setup } from './route.ts';
import type { Handler } from './wire.ts';

/**
 * The handler of an HTTP route, on either server. Checks in API order: draining (503) and auth (401, 403) for
 * keyed routes, rate limit (429), then for a body Content-Type (415), size (413), UTF-8 and JSON
 * (400), then the route's own checks (path parameters, query string, body: 400). The key lookup
 * and the token take run while the body streams; the answer is decided when both are done.
 */
export function httpHandler(route: HttpRoute, setup: Setup, answers: RouteAnswers): Handler {
  const { deps } = setup;
  const check = requestCheck(route);
  const handle = route.handler(setup);
  const params = paramNames(route.path).length;
  const limit = route.body?.limit ?? null;
  return (res, req) => {
    const ex = new Exchange(res, answers, deps.tracker);
    const raw: RawRequest = { params: Array.from({ length: params }, (_, i) => req.param(i)), query: req.query() };
    const identityHash = req.header('x-identity-hash') || undefined;
    let caller: Caller | null | undefined;
    let body: BodyResult | undefined = limit === null ? { ok: true, value: undefined } : undefined;
    const decide = (): void => {
      if (caller === undefined || body === undefined || !ex.open) return;
      if (route.auth !== 'none' && !admitted(ex, route.auth, caller)) return;
      if (!body.ok) return ex.fail(body.code);
      const [who, value] = [caller, body.value];
      guarded(deps, ex, answers.route, () => {
        const checked = check(raw, value);
        if (!checked.ok) return ex.fail('validation_failed', checked.errors);
        return handle({ ex, caller: who, ...checked.value, identityHash });
      });
    };
    if (route.auth === 'none') caller = null;
    else {
      lookUpCaller(deps, ex, route.auth, authorizationKey(req.header('authorization')), (found) => {
        caller = found;
        decide();
      });
      // Refused at once (draining, no key): the body is not read.
      if (!ex.open) return;
    }
    if (limit === null) return decide();
    readJsonBody(res, ex, { contentType: req.header('content-type'), contentLength: req.header('content-length') }, limit, (result) => {
      body = result;
      decide();
    });
  };
}
