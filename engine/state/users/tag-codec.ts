/**
 * Tag values as stored in Redis and carried in ingest entries: `s<text>` for a string, `n<number>`
 * for a number (so 10 and "10" stay apart and numbers keep their exact text), `""` for a delete.
 */
export type TagValue = string | number;

export function encodeTag(value: string | number | null): string {
  if (value === null || value === '') return '';
  return typeof value === 'number' ? `n${value}` : `s${value}`;
}

export function decodeTag(stored: string): TagValue {
  return stored.startsWith('n') ? Number(stored.slice(1)) : stored.slice(1);
}

export function encodeTags(tags: Record<string, string | number | null>): Record<string, string> {
  // No prototype: a tag may be named "__proto__" (a plain {} would swallow it).
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries(tags)) out[key] = encodeTag(value);
  return out;
}
