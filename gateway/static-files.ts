/** The static files of gateway/static/files.ts under their former path, which gateway/dashboard/assets.ts imports. */
export { htmlPage, mediaType, type StaticFile } from './static/files.ts';
