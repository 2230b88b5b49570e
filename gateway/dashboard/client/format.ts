/** Short local time with milliseconds, and the full ISO instant as a tooltip. */
export function time(iso: string | null): string {
  if (iso === null) return '—';
  const d = new Date(iso);
  return `${d.toLocaleDateString()} ${d.toLocaleTimeString()}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

export function count(n: number): string {
  return n.toLocaleString();
}

/** An ISO instant from a `datetime-local` input's value (local time), or undefined when empty. */
export function fromLocalInput(value: string): string | undefined {
  if (value === '') return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** A `datetime-local` input's value for an ISO instant. */
export function toLocalInput(iso: string | null): string {
  if (iso === null || iso === '') return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const local = new Date(d.getTime() - d.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 19);
}
