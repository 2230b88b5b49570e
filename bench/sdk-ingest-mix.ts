/**
 * The SDK write mix of bench/sdk-ingest.ts: of every 10 writes 2 identify, 3 tag updates, 4 events
 * and 1 subscription, over 100 000 users, as batch or WebSocket operations or as HTTP requests.
 */
import type { ReceiptOp, SdkOp } from '../schemas/sdk.ts';
import { androidToken } from '../simulators/tokens.ts';
import type { RequestShape } from './load.ts';

export const USERS = 100_000;
const KINDS = ['identify', 'tags', 'event', 'tags', 'event', 'identify', 'event', 'tags', 'event', 'subscribe'] as const;
const EVENTS = ['purchase', 'page_view', 'add_to_cart'] as const;
/** The operations of the mix: every SDK write but receipts. */
type MixOp = Exclude<SdkOp, ReceiptOp>;

export class IngestMix {
  private written = 0;
  private last = '';

  /** The user of the latest write: one a system has surely been sent, to check it was applied. */
  get lastUser(): string {
    return this.last;
  }

  /**
   * The next write of the mix as a batch / WebSocket operation, for one of the 100k users picked by
   * Fibonacci hashing of the write's number: consecutive writes go to different users, and a user
   * gets every kind of write (a stride over the users would tie each user to one kind).
   */
  nextOp(): MixOp {
    const n = this.written++;
    const user = Math.floor(((Math.imul(n, 0x9e3779b1) >>> 0) / 2 ** 32) * USERS);
    const external_id = `sdk-user-${user}`;
    this.last = external_id;
    switch (KINDS[n % KINDS.length]) {
      case 'identify':
        return { op: 'identify', external_id, tags: { plan: n % 3 === 0 ? 'pro' : 'free', language: 'en' } };
      case 'tags':
        return { op: 'tags', external_id, tags: { level: n % 10, last_screen: `screen-${n % 20}` } };
      case 'subscribe':
        // One token per user, re-registered: a user never passes the 20-subscription limit.
        return { op: 'subscribe', external_id, type: 'ANDROID_PUSH', token: androidToken(user), device_model: 'Pixel 8', app_version: '3.2.1' };
      default:
        return { op: 'event', external_id, name: EVENTS[n % EVENTS.length] ?? 'purchase', properties: { sku: `A-${n % 50}`, amount: 12.5 } };
    }
  }

  /**
   * The next write of the mix as its HTTP request. `putAs` is the method tag updates go out with:
   * PUT, or POST for the bare ceiling, which answers POST only (same path and body).
   */
  nextRequest(putAs: 'PUT' | 'POST'): RequestShape {
    const op = this.nextOp();
    const id = encodeURIComponent(op.external_id);
    switch (op.op) {
      case 'identify':
        return { method: 'POST', path: '/api/sdk/users', body: JSON.stringify({ external_id: op.external_id, tags: op.tags }) };
      case 'tags':
        return { method: putAs, path: `/api/sdk/users/${id}/tags`, body: JSON.stringify(op.tags) };
      case 'subscribe': {
        const body = { type: op.type, token: op.token, device_model: op.device_model, app_version: op.app_version };
        return { method: 'POST', path: `/api/sdk/users/${id}/subscriptions`, body: JSON.stringify(body) };
      }
      case 'event':
        return { method: 'POST', path: '/api/sdk/events', body: JSON.stringify({ external_id: op.external_id, name: op.name, properties: op.properties }) };
    }
  }

  /** The next `size` writes as one /api/sdk/batch body. */
  batchBody(size: number): string {
    return JSON.stringify({ operations: Array.from({ length: size }, () => this.nextOp()) });
  }
}
