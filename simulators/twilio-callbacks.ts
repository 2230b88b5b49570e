import { createHmac } from 'node:crypto';
import { isObject, type Answer } from './server.ts';
import type { CallbackRecord, DeliveryRule } from './types.ts';

const FINAL = new Set(['delivered', 'undelivered', 'failed', 'sent', 'read']);
const STEP_MS = 10;

/** X-Twilio-Signature: base64 HMAC-SHA1 over the URL and the sorted params, key = auth token. */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data = url + Object.keys(params).sort().map((k) => k + params[k]).join('');
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Posts signed delivery statuses after a message is queued, as Twilio does on `StatusCallback`. */
export class StatusCallbacks {
  #rules: { rule: DeliveryRule; left: number }[] = [];
  #log: CallbackRecord[] = [];
  #timers = new Set<NodeJS.Timeout>();
  /** Bumped by reset and close: chains scheduled before stop there. */
  #generation = 0;

  constructor(readonly authToken: string) {}

  /** Schedules `sent` then the final status (scripted for `to`, else delivered). */
  schedule(url: string, base: Record<string, string>, to: string): void {
    const rule = this.#take(to);
    const final = rule?.status ?? 'delivered';
    const steps: Record<string, string>[] = [];
    if (final !== 'failed' && final !== 'sent') steps.push({ ...base, MessageStatus: 'sent', SmsStatus: 'sent' });
    const last: Record<string, string> = { ...base, MessageStatus: final, SmsStatus: final };
    if (rule?.error_code !== undefined) last.ErrorCode = String(rule.error_code);
    steps.push(last);
    // One after the other, each after the previous post is answered, so they arrive in order.
    const generation = this.#generation;
    const next = (i: number): void => {
      const params = steps[i];
      if (params === undefined || generation !== this.#generation) return;
      const wait = STEP_MS + (i === steps.length - 1 ? (rule?.delayMs ?? 0) : 0);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        void this.#post(url, params).then(() => next(i + 1));
      }, wait);
      this.#timers.add(timer);
    };
    next(0);
  }

  /** Control routes: `POST delivery` adds a rule, `GET callbacks` lists what was posted. */
  routes(): Record<string, (body: unknown) => Answer> {
    return {
      'POST delivery': (body) => {
        if (!isObject(body) || !isObject(body.match) || typeof body.status !== 'string' || !FINAL.has(body.status))
          return { status: 400, body: { error: 'body must be {match: {token?}, status: delivered|undelivered|failed|sent|read, error_code?, delayMs?, times?}' } };
        const rule = body as unknown as DeliveryRule;
        this.#rules.push({ rule, left: rule.times ?? Infinity });
        return { status: 204 };
      },
      'GET callbacks': () => ({ status: 200, body: this.#log }),
    };
  }

  reset(): void {
    this.#rules = [];
    this.#log = [];
    this.close();
  }

  close(): void {
    this.#generation += 1;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #take(to: string): DeliveryRule | null {
    for (const entry of this.#rules) {
      if (entry.rule.match.token !== undefined && entry.rule.match.token !== to) continue;
      entry.left -= 1;
      if (entry.left <= 0) this.#rules = this.#rules.filter((e) => e !== entry);
      return entry.rule;
    }
    return null;
  }

  async #post(url: string, params: Record<string, string>): Promise<void> {
    const signature = twilioSignature(this.authToken, url, params);
    const record: CallbackRecord = { at: Date.now(), url, params, signature, status: 0 };
    this.#log.push(record);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature, 'user-agent': 'TwilioProxy/1.1' },
        body: new URLSearchParams(params).toString(),
        signal: AbortSignal.timeout(5000),
      });
      await res.arrayBuffer();
      record.status = res.status;
    } catch {
      // Twilio gives up on a callback that fails; the record keeps status 0.
    }
  }
}
