import type { ErrorCode } from '../../schemas/errors.ts';
import { JSON_TYPE, type Exchange } from './exchange.ts';
import { parseJson } from './json.ts';
import type { Reply } from './wire.ts';

/** A request body read and parsed, or the error code of why not. */
export type BodyResult = { ok: true; value: unknown } | { ok: false; code: ErrorCode };

/**
 * The JSON body of a request, in API order: Content-Type (415), size (413, from Content-Length at
 * once, else while streaming), then UTF-8 and JSON (400). `done` may be called synchronously.
 */
export function readJsonBody(res: Reply, ex: Exchange, headers: { contentType: string; contentLength: string }, limit: number, done: (result: BodyResult) => void): void {
  const early = headerError(headers.contentType, headers.contentLength, limit);
  if (early !== null) return done({ ok: false, code: early });
  readBody(res, ex, limit, done);
}

/** 415 for a non-JSON Content-Type (a charset other than UTF-8 included), 413 for a declared size over the limit. */
function headerError(contentType: string, contentLength: string, limit: number): ErrorCode | null {
  if (contentType !== JSON_TYPE && !isJsonType(contentType)) return 'unsupported_media_type';
  if (contentLength !== '' && Number(contentLength) > limit) return 'payload_too_large';
  return null;
}

function isJsonType(header: string): boolean {
  const [type = '', ...params] = header.split(';');
  if (type.trim().toLowerCase() !== JSON_TYPE) return false;
  return params.every((p) => {
    const [name = '', value = ''] = p.split('=');
    if (name.trim().toLowerCase() !== 'charset') return true;
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    return charset === 'utf-8' || charset === 'utf8';
  });
}

/**
 * Streams the body, keeping at most `limit` bytes: past it, buffering stops and the result is 413
 * (both servers read and drop the rest, so the connection stays usable). A body in one chunk is
 * parsed straight from the server's buffer, which is only valid during the callback.
 */
function readBody(res: Reply, ex: Exchange, limit: number, done: (result: BodyResult) => void): void {
  let chunks: Buffer[] | null = null;
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over || !ex.open) return;
    size += chunk.byteLength;
    if (size > limit) {
      over = true;
      chunks = null;
      return done({ ok: false, code: 'payload_too_large' });
    }
    if (isLast && chunks === null) return done(parse(chunk));
    chunks ??= [];
    if (chunk.byteLength > 0) chunks.push(Buffer.from(chunk));
    if (isLast) done(parse(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
  });
}

function parse(bytes: Uint8Array): BodyResult {
  try {
    return { ok: true, value: parseJson(bytes) };
  } catch {
    return { ok: false, code: 'invalid_json' };
  }
}
