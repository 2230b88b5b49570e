/** A command-line mistake: printed with the usage text, exit status 2. */
export class UsageError extends Error {}
