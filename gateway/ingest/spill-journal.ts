import { ftruncateSync, mkdirSync } from 'node:fs';
import { open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** The file operations the journal uses; a `FileHandle` fits, and a test may wrap one to make a call fail. */
export interface JournalFile {
  readonly fd: number;
  write(data: Buffer): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
  truncate(len: number): Promise<void>;
  close(): Promise<void>;
}

export interface SpillJournalOptions {
  /** Opens the journal file (default: `open` of node:fs/promises). */
  openFile?: (path: string, flags: string) => Promise<JournalFile>;
}

/**
 * The gateway's local spill journal: JSON lines fsynced by group commit, a write acknowledged only
 * after its fsync; a failed commit is cut back off the file before its writes are refused
 * (docs/architecture.md, "The spill journal and its replay").
 */
export class SpillJournal {
  private file: JournalFile | null = null;
  private pending: { data: Buffer; done: () => void; fail: (err: unknown) => void }[] = [];
  private flushing: Promise<void> | null = null;
  /** Bytes fsynced to the journal file. */
  private durableBytes = 0;
  /** Bytes appended and not yet fsynced or refused, the commit in flight included. */
  private pendingBytes = 0;
  /** The file may hold bytes past `durableBytes` (a failed commit whose rollback failed too). */
  private needsRollback = false;
  private readonly openFile: (path: string, flags: string) => Promise<JournalFile>;

  constructor(
    private readonly dir: string,
    private readonly name: string,
    private readonly maxBytes: number,
    options: SpillJournalOptions = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.openFile = options.openFile ?? open;
  }

  get path(): string {
    return join(this.dir, `${this.name}.journal`);
  }

  /** Bytes that are durable now plus those waiting for their fsync. */
  get size(): number {
    return this.durableBytes + this.pendingBytes;
  }

  /** True when nothing waits for an fsync. */
  get idle(): boolean {
    return this.pending.length === 0 && this.flushing === null;
  }

  get durable(): number {
    return this.durableBytes;
  }

  /** Whether `bytes` more would still fit under the journal's size limit. */
  fits(bytes: number): boolean {
    return this.size + bytes <= this.maxBytes;
  }

  /** Appends lines (no newlines inside) and resolves once they are fsynced; rejects when they were not kept. */
  append(lines: string[]): Promise<void> {
    const data = Buffer.from(lines.map((l) => l + '\n').join(''));
    this.pendingBytes += data.length;
    return new Promise((done, fail) => {
      this.pending.push({ data, done, fail });
      this.flushing ??= this.flush();
    });
  }

  /**
   * Empties the journal after everything in it was replayed. Synchronous so the caller can switch
   * writes back to Redis in the same tick; only valid while idle.
   */
  clearSync(): void {
    if (!this.idle) throw new Error('spill journal cleared while an append is in flight');
    if (this.file) ftruncateSync(this.file.fd, 0);
    this.durableBytes = 0;
  }

  /** Waits for the commit in flight; a file still holding refused bytes gets one more rollback first. */
  async close(): Promise<void> {
    await this.flushing;
    const file = this.file;
    this.file = null;
    if (!file) return;
    try {
      if (this.needsRollback) await this.rollBack(file);
    } finally {
      await file.close();
    }
  }

  /**
   * Claims the journals that gateways no longer running left in the directory (renamed so that two
   * gateways on one data directory never replay the same file) and returns their paths, oldest
   * first. `isLive(name)` tells a journal that a running gateway is still appending to.
   */
  async adoptOrphans(isLive: (name: string) => boolean): Promise<string[]> {
    const own = `${this.name}.journal`;
    const files = (await readdir(this.dir))
      .filter((f) => f.endsWith('.journal') && f !== own && !isLive(f.slice(0, -'.journal'.length)))
      .sort();
    const adopted: string[] = [];
    for (const file of files) {
      const target = join(this.dir, `${file}.adopted-${this.name}`);
      try {
        await rename(join(this.dir, file), target);
        adopted.push(target);
      } catch {
        // Another gateway adopted it first.
      }
    }
    return adopted;
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      const data = Buffer.concat(batch.map((p) => p.data));
      try {
        await this.commit(data);
        this.durableBytes += data.length;
        this.pendingBytes -= data.length;
        for (const p of batch) p.done();
      } catch (err) {
        this.pendingBytes -= data.length;
        for (const p of batch) p.fail(err);
      }
    }
    this.flushing = null;
  }

  /**
   * Writes and fsyncs one group commit at the durable length. The file is opened with O_APPEND, so
   * every write lands at the end of the file, which a rollback has made the durable length again.
   * While a rollback keeps failing, commits are refused without writing: anything appended after
   * refused bytes would make them durable, and replay would read them. (Moving to a new file would
   * not help: the old one, refused bytes included, would still be replayed.)
   */
  private async commit(data: Buffer): Promise<void> {
    const file = (this.file ??= await this.openFile(this.path, 'a'));
    if (this.needsRollback) await this.rollBack(file);
    try {
      const { bytesWritten } = await file.write(data);
      if (bytesWritten !== data.length) throw new Error(`short write to the spill journal: ${bytesWritten} of ${data.length} bytes`);
      await file.datasync();
    } catch (err) {
      this.needsRollback = true;
      // When this fails, the next commit tries again first.
      await this.rollBack(file).catch(() => undefined);
      throw err;
    }
  }

  /** Cuts the file back to its durable length; fsynced, so a machine crash cannot bring the refused bytes back. */
  private async rollBack(file: JournalFile): Promise<void> {
    await file.truncate(this.durableBytes);
    await file.datasync();
    this.needsRollback = false;
  }
}

/** Reads the complete lines of a journal file from a byte offset; a torn last line is left out. */
export async function readJournal(path: string, offset: number, maxBytes: number): Promise<{ lines: string[]; next: number }> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes, offset);
    const end = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (end < 0) return { lines: [], next: offset };
    const text = buffer.subarray(0, end).toString('utf8');
    return { lines: text.split('\n'), next: offset + end + 1 };
  } finally {
    await handle.close();
  }
}

export async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}

export async function removeFile(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}
