/** A wait that its owner can end early (a stop): what every loop of the engine sleeps on. */
export class Pause {
  private wakeUp: (() => void) | undefined;

  /** Waits `ms`, or less when wake() is called meanwhile. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Ends the wait in progress, if any. */
  wake(): void {
    this.wakeUp?.();
  }
}
