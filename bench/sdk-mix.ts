/**
 * The mixed SDK write load of the apply-lag and soak benchmarks, over a fixed set of users so a
 * long run does not grow the state by design: of every 10 writes, 4 are events, 3 tag updates,
 * 2 identifies (merging tags) and 1 a re-registration of the user's one IOS_PUSH token.
 */

import { iosToken } from '../simulators/tokens.ts';

/** One HTTP write. */
export interface Write {
  method: 'POST' | 'PUT';
  path: string;
  body: string;
}

const KINDS = ['event', 'tags', 'event', 'identify', 'event', 'tags', 'subscribe', 'event', 'tags', 'identify'] as const;
/** The least common multiple of the moduli next() takes of n besides the user's: 10, 3, 12 and 50. */
const VALUES_PERIOD = 300;

export class SdkMix {
  private n = 0;

  /** `users` external ids `<prefix>0` .. `<prefix>{users-1}`. */
  constructor(
    readonly users: number,
    readonly prefix: string,
  ) {}

  /** How many writes next() has given or skip() passed over: where a copy of the sequence goes on. */
  get position(): number {
    return this.n;
  }

  /** The length after which next() repeats itself. */
  get period(): number {
    const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
    return (this.users / gcd(this.users, VALUES_PERIOD)) * VALUES_PERIOD;
  }

  /** Passes over `count` writes that something else sent from a copy of the sequence (bench/mix-load.ts). */
  skip(count: number): void {
    this.n += count;
  }

  user(i: number): string {
    return `${this.prefix}${i}`;
  }

  /** The next write of the mix; users rotate so consecutive writes go to different users. */
  next(): Write {
    const n = this.n++;
    const i = (n * 7919) % this.users;
    const id = encodeURIComponent(this.user(i));
    switch (KINDS[n % KINDS.length]) {
      case 'tags':
        return { method: 'PUT', path: `/api/sdk/users/${id}/tags`, body: JSON.stringify({ level: n % 10, plan: n % 3 === 0 ? 'pro' : 'free' }) };
      case 'identify':
        return { method: 'POST', path: '/api/sdk/users', body: JSON.stringify({ external_id: this.user(i), tags: { language: 'en', cohort: `c${n % 12}` } }) };
      case 'subscribe':
        return { method: 'POST', path: `/api/sdk/users/${id}/subscriptions`, body: JSON.stringify({ type: 'IOS_PUSH', token: iosToken(i), app_version: '1.0.0' }) };
      default:
        return { method: 'POST', path: '/api/sdk/events', body: JSON.stringify({ external_id: this.user(i), name: 'purchase', properties: { sku: `A-${n % 50}`, amount: 12.5 } }) };
    }
  }

  /** One /api/sdk/batch body registering users [from, to): identify with tags and one IOS_PUSH token each. */
  registration(from: number, to: number): { operations: Record<string, unknown>[] } {
    const operations: Record<string, unknown>[] = [];
    for (let i = from; i < to; i++) {
      operations.push({ op: 'identify', external_id: this.user(i), tags: { language: 'en', plan: 'free' } });
      operations.push({ op: 'subscribe', external_id: this.user(i), type: 'IOS_PUSH', token: iosToken(i) });
    }
    return { operations };
  }
}

/** A tag write whose value is unique, to see when it becomes visible: `probe` = value. */
export function probeWrite(externalId: string, value: string): Write {
  return { method: 'PUT', path: `/api/sdk/users/${encodeURIComponent(externalId)}/tags`, body: JSON.stringify({ probe: value }) };
}
