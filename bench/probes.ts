import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { sleep } from './deployment.ts';
import { percentile, type PacedOptions } from './paced.ts';
import { probeWrite, type Write } from './sdk-mix.ts';
import { round } from './table.ts';

/** The apply lag of the probes of one load. */
export interface LagFigures {
  samples: number;
  visible: number;
  /** Probes not visible within the timeout: counted, not timed. */
  not_visible: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** GET /api/users/{id} answers the polling took. */
  polls: number;
}

export interface ProbeOptions {
  base: string;
  restKey: string;
  /** Writes from this index on, one in `every`, are probes. */
  from: number;
  every: number;
  /** Probe users are `<prefix><index>`: each its own, so a probe is the user's only write. */
  prefix: string;
  pollMs: number;
  timeoutMs: number;
}

/**
 * Apply-lag probes inside a paced load: a probe is a tag write with a unique value; from its 202
 * on, GET /api/users/{id} is polled every `pollMs` until the value shows, and its lag is the
 * arrival of that answer minus the arrival of the 202.
 */
export class LagProbes {
  private readonly polls: Pool;
  private readonly lags: number[] = [];
  private readonly watching: Promise<void>[] = [];
  private notVisible = 0;
  private answers = 0;

  constructor(private readonly opts: ProbeOptions) {
    this.polls = new Pool(opts.base, { connections: 16, pipelining: 1 });
  }

  isProbe(i: number): boolean {
    return i >= this.opts.from && (i - this.opts.from) % this.opts.every === 0;
  }

  /** paced()'s `next` and `onAccepted`: the probe where one is due, `other()` elsewhere. */
  hooks(other: () => Write): Pick<PacedOptions, 'next' | 'onAccepted'> {
    return {
      next: (i) => (this.isProbe(i) ? probeWrite(`${this.opts.prefix}${i}`, `v${i}`) : other()),
      onAccepted: (i, _write, at) => {
        if (this.isProbe(i)) this.watching.push(this.watch(`${this.opts.prefix}${i}`, `v${i}`, at).catch(() => void (this.notVisible += 1)));
      },
    };
  }

  /** Waits for every probe to show or time out, closes the poll connections, gives the lags. */
  async done(): Promise<LagFigures> {
    await Promise.all(this.watching);
    await this.polls.close();
    this.lags.sort((a, b) => a - b);
    return {
      samples: this.lags.length + this.notVisible,
      visible: this.lags.length,
      not_visible: this.notVisible,
      p50_ms: round(percentile(this.lags, 0.5), 1),
      p99_ms: round(percentile(this.lags, 0.99), 1),
      max_ms: round(this.lags.at(-1) ?? 0, 1),
      polls: this.answers,
    };
  }

  private async watch(user: string, value: string, acceptedAt: number): Promise<void> {
    const headers = { authorization: `Bearer ${this.opts.restKey}` };
    for (;;) {
      const res = await this.polls.request({ method: 'GET', path: `/api/users/${encodeURIComponent(user)}`, headers });
      const text = await res.body.text();
      const at = performance.now();
      this.answers += 1;
      if (res.statusCode === 200 && (JSON.parse(text) as { tags?: Record<string, unknown> }).tags?.['probe'] === value) {
        this.lags.push(at - acceptedAt);
        return;
      }
      if (at - acceptedAt > this.opts.timeoutMs) {
        this.notVisible += 1;
        return;
      }
      await sleep(this.opts.pollMs);
    }
  }
}
