/** A whole-number benchmark setting from the environment, or its default. */
export function positive(name: string, fallback: number, zeroAllowed = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < (zeroAllowed ? 0 : 1)) throw new Error(`${name} must be a whole number of at least ${zeroAllowed ? 0 : 1}, got "${raw}"`);
  return value;
}

/** A whole-number command-line flag of at least 1; `name` is the flag without its dashes. */
export function wholeFlag(name: string, raw: string | boolean | undefined): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number of at least 1, got ${String(raw)}`);
  return value;
}
