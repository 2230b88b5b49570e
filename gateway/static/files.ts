import { createHash } from 'node:crypto';
import { extname } from 'node:path';
import Type from 'typebox';
import { httpRoute, type HttpRoute } from '../server/route.ts';

/**
 * Routes that serve files held in memory (the API reference's viewer, the dashboard's assets).
 *
 *   export const page = staticFile({ path: '/app', summary: 'The app', type: mediaType('.html'), file: () => ({ body: html, type: mediaType('.html') }) });
 *   export const assets = staticFiles({
 *     path: '/app/assets/{file}',
 *     summary: 'The app\'s scripts and styles',
 *     types: [mediaType('.js'), mediaType('.css')],
 *     files: () => ({ [hashedName('app.js', js)]: { body: js, type: mediaType('.js'), immutable: true } }),
 *   });
 *
 * `types` are the media types the route answers with (its declaration and documentation). The
 * loader may be async (a build); it runs once per process, at the first request (a gateway that
 * never serves the files pays nothing), later requests wait for it, and one that failed is tried
 * again by the next request. A file marked immutable
 * (its name changes whenever its content does: a version or a hash in it) is cached by browsers
 * for a year without asking again; any other file is revalidated on every use (`no-cache`). A name
 * not in the set is 404 `not_found`.
 */

export interface StaticFile {
  body: string | Buffer;
  /** Its Content-Type; one of the route's declared `types`. */
  type: string;
  /** Its name changes with its content, so browsers may keep it for good. */
  immutable?: boolean;
  /** More response headers (a Content-Security-Policy for a page, say). */
  headers?: readonly (readonly [string, string])[];
}

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** The Content-Type of a file name or extension (`'.js'`, `'app.css'`); throws for one this module does not know. */
export function mediaType(nameOrExtension: string): string {
  const type = types[extname(nameOrExtension) || nameOrExtension];
  if (type === undefined) throw new Error(`no media type known for ${nameOrExtension}`);
  return type;
}

/** `name` with the first 10 hex digits of the content's SHA-256 before its extension: `app.js` → `app.3f2a9c1b07.js`. */
export function hashedName(name: string, body: string | Buffer): string {
  const ext = extname(name);
  return `${name.slice(0, name.length - ext.length)}.${createHash('sha256').update(body).digest('hex').slice(0, 10)}${ext}`;
}

/**
 * A page's own headers: everything it loads or calls comes from the gateway (deployments may have
 * no internet; no CDN, no outside font). Inline styles stay allowed: the viewers set them.
 */
const pageHeaders = [
  [
    'Content-Security-Policy',
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  ],
  ['Referrer-Policy', 'no-referrer'],
] as const;

/**
 * An HTML page that loads `styles` and then `scripts` (paths on the gateway; `module` loads them as
 * ES modules) into an empty element `root`, with pageHeaders. Its icon is a data: URL, or the
 * browser would ask for /favicon.ico.
 */
export function htmlPage(page: { title: string; root: string; styles: readonly string[]; scripts: readonly string[]; module?: boolean }): StaticFile {
  const type = page.module ? ' type="module"' : '';
  return {
    type: mediaType('.html'),
    headers: pageHeaders,
    body: `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title}</title>
<link rel="icon" href="data:,">
${page.styles.map((href) => `<link rel="stylesheet" href="${href}">`).join('\n')}
</head>
<body>
<div id="${page.root}"></div>
${page.scripts.map((src) => `<script${type} src="${src}"></script>`).join('\n')}
</body>
</html>
`,
  };
}

/** A GET route without a key that answers one file at a fixed path (an HTML page). */
export function staticFile(decl: { path: string; summary: string; type: string; file: () => Loaded<StaticFile> }): HttpRoute {
  const load = once(() => then(decl.file(), prepared));
  return httpRoute({
    method: 'get',
    path: decl.path,
    auth: 'none',
    summary: decl.summary,
    answers: { 200: { schema: Type.String(), contentType: bare(decl.type) } },
    handler: () => ({ ex }) => then(load(), (file) => ex.send(200, file.body, file.type, file.headers)),
  });
}

/** A GET route without a key that answers the file named by its last path parameter, or 404 `not_found`. */
export function staticFiles(decl: { path: string; summary: string; types: readonly string[]; files: () => Loaded<Record<string, StaticFile>> }): HttpRoute {
  const name = /\{([^}]+)\}$/.exec(decl.path)?.[1];
  if (name === undefined) throw new Error(`${decl.path} must end with a {parameter} naming the file`);
  const load = once(() => then(decl.files(), (files) => new Map(Object.entries(files).map(([n, f]) => [n, prepared(f)]))));
  return httpRoute({
    method: 'get',
    path: decl.path,
    auth: 'none',
    summary: decl.summary,
    params: Type.Object({ [name]: Type.String({ minLength: 1, maxLength: 200, description: 'A file name' }) }),
    answers: { 200: { schema: Type.String(), contentType: decl.types.map(bare) } },
    errors: ['not_found'],
    handler: () => ({ ex, params }) =>
      then(load(), (files) => {
        const file = files.get(params[name] ?? '');
        if (file === undefined) return ex.fail('not_found');
        ex.send(200, file.body, file.type, file.headers);
      }),
  });
}

interface Prepared {
  body: Buffer;
  type: string;
  headers: (readonly [string, string])[];
}

/** Encoded once, with its caching headers: the server then sends the bytes as they are on every request. */
function prepared(file: StaticFile): Prepared {
  const cache = file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache';
  return {
    body: typeof file.body === 'string' ? Buffer.from(file.body) : file.body,
    type: file.type,
    headers: [['Cache-Control', cache], ['X-Content-Type-Options', 'nosniff'], ...(file.headers ?? [])],
  };
}

/** The media type without its parameters, as answers are declared and documented. */
function bare(type: string): string {
  return type.split(';')[0]?.trim() ?? type;
}

type Loaded<T> = T | Promise<T>;

/** `f` of the value, at once when it is loaded, else when it is (no extra turn for a file in memory). */
function then<T, R>(value: Loaded<T>, f: (v: T) => R): Loaded<R> {
  return value instanceof Promise ? value.then(f) : f(value);
}

function once<T>(load: () => Loaded<T>): () => Loaded<T> {
  let value: { v: Loaded<T> } | null = null;
  return () => {
    if (value !== null) return value.v;
    const v = load();
    value = { v };
    // Observed here, so a failed build waiting for its first request is no unhandled rejection.
    if (v instanceof Promise) v.catch(() => (value?.v === v ? (value = null) : undefined));
    return value.v;
  };
}
