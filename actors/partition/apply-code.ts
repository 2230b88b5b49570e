/** Return codes of engine/lua/applyBatch-5.lua (its first reply element). */
export enum ApplyCode {
  /** Applied; entries at or below the last applied ID were skipped. */
  Ok = 0,
  /** The partition's lease names another worker (or none): nothing was written. */
  NotOwner = 1,
  /** The batch does not continue the stream right after the last applied ID: nothing was written. */
  Gap = 2,
}
