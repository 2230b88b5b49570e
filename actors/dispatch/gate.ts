/**
 * A counting semaphore: at most `size` holders at once, the others wait in arrival order. Dispatch
 * holds one slot of its project's and provider's gate per send, so a slow provider fills its own
 * gate, never memory or the other providers' and projects' sends.
 */
export class Gate {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {}

  /** No slot is held and nobody waits. */
  get idle(): boolean {
    return this.held === 0 && this.waiting.length === 0;
  }

  /** The release of a slot taken now, or null when none is free. */
  tryAcquire(): (() => void) | null {
    if (this.held >= this.size) return null;
    this.held++;
    return this.releaser();
  }

  /** Resolves with the release of a slot once one is free. */
  async acquire(): Promise<() => void> {
    if (this.held >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.held++;
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.held--;
    };
  }
}
