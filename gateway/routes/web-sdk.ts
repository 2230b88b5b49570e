import { htmlPage, mediaType, staticFile, staticFiles } from '../static/files.ts';
import { webSdkFiles } from '../static/web-sdk.ts';

export const webSdk = staticFiles({
  path: '/sdk/{file}',
  summary: "The web SDK: web.js (sets window.svc), web.mjs (an ES module), web-sw.js (its service worker) and demo.js (the demo page's)",
  types: [mediaType('.js')],
  files: webSdkFiles,
});

export const webSdkDemo = staticFile({
  path: '/demo',
  summary: 'A page that uses the web SDK: log in, tags, events, Web Push (it asks for an SDK key)',
  type: mediaType('.html'),
  file: () => htmlPage({ title: 'Web SDK demo', root: 'demo', styles: [], scripts: ['/sdk/web.js', '/sdk/demo.js'] }),
});
