import { dashboardBuild } from '../dashboard/assets.ts';
import { mediaType, staticFile, staticFiles } from '../static/files.ts';

export const dashboard = staticFile({
  path: '/dashboard',
  summary: 'The delivery dashboard (the page asks for a REST key)',
  type: mediaType('.html'),
  file: async () => (await dashboardBuild()).page,
});

export const dashboardAssets = staticFiles({
  path: '/dashboard/assets/{file}',
  summary: "The dashboard's script and stylesheet; their names change with their content",
  types: [mediaType('.js'), mediaType('.css')],
  files: async () => Object.fromEntries([...(await dashboardBuild()).assets].map(([name, a]) => [name, { ...a, immutable: true }])),
});
