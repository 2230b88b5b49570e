import { mediaType, staticFiles } from '../static/files.ts';
import { docsAssets as files, docsAssetsPath } from '../static/swagger-ui.ts';

export const docsAssets = staticFiles({
  path: `${docsAssetsPath}/{file}`,
  summary: "The reference page's script and stylesheet (Swagger UI's, and its settings)",
  types: [mediaType('.js'), mediaType('.css')],
  files,
});
