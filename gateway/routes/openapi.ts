import { readFileSync } from 'node:fs';
import Type from 'typebox';
import { openApiDocument } from '../server/openapi.ts';
import { httpRoute } from '../server/route.ts';

const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export const openapi = httpRoute({
  method: 'get',
  path: '/api/openapi.json',
  auth: 'none',
  summary: 'This document',
  answers: { 200: Type.Object({ openapi: Type.Literal('3.1.0'), paths: Type.Object({}) }) },
  handler: ({ routes }) => {
    // Built once: the document only changes with the code.
    const document = JSON.stringify(openApiDocument(routes, version));
    return ({ ex }) => ex.send(200, document);
  },
});
