import Type from 'typebox';
import { docsPage } from '../docs-page.ts';
import { httpRoute } from '../route.ts';

export const docs = httpRoute({
  method: 'get',
  path: '/api/docs',
  auth: 'none',
  summary: 'This reference, interactive',
  answers: { 200: { schema: Type.String(), contentType: 'text/html' } },
  handler:
    () =>
    ({ ex }) =>
      ex.send(200, docsPage, 'text/html; charset=utf-8'),
});
