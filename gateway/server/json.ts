/** Strict UTF-8: invalid bytes throw instead of becoming U+FFFD. */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets past the UTF-8 check. */
const surrogateEscape = /\\u[dD][89a-fA-F]/;

/**
 * Parses a request body or frame: UTF-8, then JSON, and no string or key holding a lone UTF-16
 * surrogate (valid JSON grammar, but no Unicode text: it could not be stored or applied, and a
 * write must not be accepted that the workers would then have to skip). Throws on any of these.
 */
export function parseJson(bytes: Uint8Array): unknown {
  const text = utf8.decode(bytes);
  const value = JSON.parse(text) as unknown;
  if (surrogateEscape.test(text) && !wellFormed(value)) throw new SyntaxError('lone UTF-16 surrogate');
  return value;
}

function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (Array.isArray(value)) return value.every(wellFormed);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).every(([key, v]) => key.isWellFormed() && wellFormed(v));
  }
  return true;
}
