import Type from 'typebox';
import { httpRoute } from '../server/route.ts';

export const healthz = httpRoute({
  method: 'get',
  path: '/healthz',
  auth: 'none',
  summary: 'The process runs',
  answers: { 200: Type.Object({ ok: Type.Literal(true) }) },
  handler:
    () =>
    ({ ex }) =>
      ex.send(200, '{"ok":true}'),
});
