import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { hashedName, htmlPage, mediaType, type StaticFile } from './files.ts';

/**
 * `GET /api/docs`: Swagger UI (the swagger-ui-dist package) over /api/openapi.json, every file
 * served by the gateway itself: deployments may have no internet, and the page asks for a key.
 */

const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The package's version: part of its files' paths, so browsers keep them until it changes. */
export const swaggerUiVersion = (JSON.parse(readFileSync(join(dist, 'package.json'), 'utf8')) as { version: string }).version;

export const docsAssetsPath = `/api/docs/assets/${swaggerUiVersion}`;

// validatorUrl: null, or the page would send the document to validator.swagger.io. BaseLayout
// leaves out the standalone top bar, whose box loads any URL typed in it.
const init = `window.ui = SwaggerUIBundle({
  url: '/api/openapi.json',
  dom_id: '#swagger-ui',
  validatorUrl: null,
  deepLinking: true,
  tryItOutEnabled: true,
  displayRequestDuration: true,
  filter: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;
const initName = hashedName('docs-init.js', init);

export const docsPage: StaticFile = htmlPage({
  title: 'API reference',
  root: 'swagger-ui',
  styles: [`${docsAssetsPath}/swagger-ui.css`],
  scripts: [`${docsAssetsPath}/swagger-ui-bundle.js`, `${docsAssetsPath}/${initName}`],
});

/** The viewer's files, read from the package (once per process, by the asset route). */
export function docsAssets(): Record<string, StaticFile> {
  const read = (name: string): string => readFileSync(join(dist, name), 'utf8');
  return {
    // Without its source map (not served): a browser's developer tools would ask for it.
    'swagger-ui.css': { body: read('swagger-ui.css').replace(/\/\*# sourceMappingURL=\S+\s*\*\/\s*$/, ''), type: mediaType('.css'), immutable: true },
    'swagger-ui-bundle.js': { body: read('swagger-ui-bundle.js'), type: mediaType('.js'), immutable: true },
    [initName]: { body: init, type: mediaType('.js'), immutable: true },
  };
}
