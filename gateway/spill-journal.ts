import { ftruncateSync, mkdirSync } from 'node:fs';
import { open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The gateway's local spill journal (API.md section 3, DESIGN.md invariant 1): while Redis is
 * unreachable, accepted writes are appended here as JSON lines and fsynced with group commit (all
 * appends that arrive while one fsync runs share the next), and a write is acknowledged only after
 * its fsync. Files of a crashed process are adopted at start and replayed before anything new.
 */
export class SpillJournal {
  private handle: FileHandle | null = null;
  private pending: { data: string; done: () => void; fail: (err: unknown) => void }[] = [];
  private flushing: Promise<void> | null = null;
  /** Bytes fsynced to the journal file. */
  private durableBytes = 0;

  constructor(
    private readonly dir: string,
    private readonly name: string,
    private readonly maxBytes: number,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  get path(): string {
    return join(this.dir, `${this.name}.journal`);
  }

  /** Bytes that are durable now plus those waiting for the next fsync. */
  get size(): number {
    return this.durableBytes + this.pending.reduce((n, p) => n + Buffer.byteLength(p.data), 0);
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

  /** Appends lines (no newlines inside) and resolves once they are fsynced. */
  append(lines: string[]): Promise<void> {
    return new Promise((done, fail) => {
      this.pending.push({ data: lines.map((l) => l + '\n').join(''), done, fail });
      this.flushing ??= this.flush();
    });
  }

  /**
   * Empties the journal after everything in it was replayed. Synchronous so the caller can switch
   * writes back to Redis in the same tick; only valid while idle.
   */
  clearSync(): void {
    if (!this.idle) throw new Error('spill journal cleared while an append is in flight');
    if (this.handle) ftruncateSync(this.handle.fd, 0);
    this.durableBytes = 0;
  }

  async close(): Promise<void> {
    await this.flushing;
    await this.handle?.close();
    this.handle = null;
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
      try {
        this.handle ??= await open(this.path, 'a');
        const data = Buffer.from(batch.map((p) => p.data).join(''));
        await this.handle.write(data);
        await this.handle.datasync();
        this.durableBytes += data.length;
        for (const p of batch) p.done();
      } catch (err) {
        for (const p of batch) p.fail(err);
      }
    }
    this.flushing = null;
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

export async function removeFile(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}
