/**
 * `Retry-After` (delay seconds or an HTTP date) in ms from now; null when absent or unreadable.
 * Read from every peer the engine calls: providers (actors/dispatch) and webhook receivers.
 */
export function retryAfterMs(value: string | string[] | undefined | null, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw === null || raw.trim() === '') return null;
  const text = raw.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date names its day and month (RFC 9110 section 5.6.7); Date.parse takes far more.
  if (!/[A-Za-z]{3}/.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}
