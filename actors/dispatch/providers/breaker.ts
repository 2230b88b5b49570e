import { ownCode } from '../../../schemas/delivery-codes.ts';
import { DEFAULT_TIMEOUT_MS, failure, type ProviderClient, type PushMessage, type SendResult, type Target } from './provider.ts';

export interface BreakerOptions {
  /** Sends in a row that got no answer (timeout, connection error) before the breaker opens. */
  threshold: number;
  /** How long an open breaker fails sends at once before it lets one probe through, ms. */
  coolDownMs: number;
}

/** The breaker of a client whose requests time out after `timeoutMs`: it pauses for half that. */
export function breakerOptions(timeoutMs = DEFAULT_TIMEOUT_MS): BreakerOptions {
  return { threshold: 5, coolDownMs: Math.ceil(timeoutMs / 2) };
}

/**
 * A circuit breaker around one project's client of one provider (docs/providers.md#connections).
 * After `threshold` sends in a row got no answer, it opens: sends fail at once as
 * `provider_unavailable`, retried after the cool-down like a timeout, without a request. Then one
 * send at a time goes through as a probe; any answer of the provider, even a refusal, closes the
 * breaker. A provider that answers late or never so holds a few sends of a dispatch window for
 * one timeout, not every job that reaches it: the other providers' and projects' sends go on.
 */
export class Breaker implements ProviderClient {
  /** Sends in a row without an answer. */
  private silent = 0;
  private openUntil = 0;
  private probing = false;

  constructor(
    private readonly inner: ProviderClient,
    private readonly opts: Readonly<BreakerOptions>,
  ) {}

  send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    if (this.silent >= this.opts.threshold) return this.probe(target, message, signal);
    // A closed breaker adds one reaction to the send, not an async frame (most sends pass it).
    return this.inner.send(target, message, signal).then(this.observe);
  }

  /** A send while the breaker is open: refused at once until the cool-down ends, then one probe at a time. */
  private async probe(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    const wait = this.openUntil - Date.now();
    if (wait > 0 || this.probing) return failure(ownCode('provider_unavailable'), null, wait > 0 ? wait : this.opts.coolDownMs);
    this.probing = true;
    try {
      return this.observe(await this.inner.send(target, message, signal));
    } finally {
      this.probing = false;
    }
  }

  private readonly observe = (result: SendResult): SendResult => {
    if (!result.ok && (result.code === 'timeout' || result.code === 'connection_error')) {
      this.silent++;
      if (this.silent >= this.opts.threshold) this.openUntil = Date.now() + this.opts.coolDownMs;
    } else {
      this.silent = 0;
    }
    return result;
  };

  close(): Promise<void> {
    return this.inner.close();
  }
}
