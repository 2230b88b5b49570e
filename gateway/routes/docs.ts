import { mediaType, staticFile } from '../static/files.ts';
import { docsPage } from '../static/swagger-ui.ts';

export const docs = staticFile({
  path: '/api/docs',
  summary: 'This reference, interactive (Swagger UI): paste a key under Authorize, then try any call',
  type: mediaType('.html'),
  file: () => docsPage,
});
