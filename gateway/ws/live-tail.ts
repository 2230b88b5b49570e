import type { Cluster, Redis } from 'ioredis';
import type { OutcomeEntry } from '../../schemas/outcomes.ts';
import type { LiveQuery, MessageDelivery } from '../../schemas/queries.ts';
import type { GatewayDeps } from '../server/deps.ts';
import type { Socket, SocketChannel, UpgradeCall } from '../server/socket.ts';
import { SEND_HIGH_WATER } from './answer-queue.ts';

/**
 * Bytes a connection may leave unsent before its records are dropped (and counted for its gap
 * frame); past MAX_BACKPRESSURE the server itself would drop a send, and one frame over this fits
 * under it.
 */
const MAX_BUFFERED = SEND_HIGH_WATER;
/** Records per frame, so one frame stays well under MAX_BACKPRESSURE. */
const FRAME_RECORDS = 500;

interface Viewer {
  project: string;
  matches: (record: Outcome) => boolean;
  /** Records dropped since the last gap frame: 0 for none, null for an unknown number. */
  missed: number | null;
}

/** The subscriber connection, and the answer to its latest SUBSCRIBE (upgrades wait for it). */
interface Subscriber {
  redis: Redis | Cluster;
  ready: Promise<unknown>;
}

/** A line the recorder published: an outcome entry (schemas/outcomes.ts) with its stream id. */
type Outcome = OutcomeEntry & { stream_id: string };

/**
 * GET /api/deliveries/live (docs/api.md#the-live-tail): every delivery record as the recorder
 * inserts it (actors/recorder/sink.ts publishes each insert's lines on one Redis channel), narrowed
 * by the filters of GET /api/deliveries. One subscriber connection per gateway process, open while
 * a connection is. A connection that reads too slowly is never buffered for without bound: past
 * MAX_BUFFERED unsent bytes its records are dropped and counted, and once it has drained it is sent
 * `{"gap":{"missed":N}}` before the next records. When the subscriber's connection drops, what is
 * published until it has resubscribed is lost for every connection: each is then sent
 * `{"gap":{"missed":null}}`.
 */
export class LiveTailChannel implements SocketChannel<LiveQuery, Viewer> {
  readonly maxPayload = 4096;
  private readonly sockets = new Set<Socket<Viewer>>();
  private subscriber: Subscriber | null = null;
  /** Upgrades checked and waiting for the subscription: they too keep the subscriber open. */
  private upgrading = 0;

  constructor(private readonly deps: Pick<GatewayDeps, 'redis' | 'topology' | 'log' | 'metrics'>) {}

  /** Subscribed before the 101: a record written after the answer reaches the connection. */
  async upgrade({ caller, query, accept }: UpgradeCall<LiveQuery, Viewer>): Promise<void> {
    this.upgrading++;
    try {
      await this.subscribe();
      accept({ project: caller.project, matches: matcher(query), missed: 0 });
    } finally {
      this.upgrading--;
      this.unsubscribeIfIdle();
    }
  }

  open(ws: Socket<Viewer>): void {
    this.sockets.add(ws);
    // Normally subscribed before the upgrade; again here if the last connection closed meanwhile.
    this.subscribe().catch(() => {
      if (this.sockets.has(ws)) ws.end(1011, 'live tail unavailable');
    });
  }

  /** Clients send nothing here; a frame is ignored. */
  message(): void {}

  drain(ws: Socket<Viewer>): void {
    if (ws.getUserData().missed !== 0 && ws.getBufferedAmount() <= MAX_BUFFERED) this.sendGap(ws);
  }

  close(ws: Socket<Viewer>): void {
    this.sockets.delete(ws);
    this.unsubscribeIfIdle();
  }

  closeAll(): void {
    this.closeAllWith(1001, 'server shutting down');
  }

  private closeAllWith(code: number, reason: string): void {
    for (const ws of [...this.sockets]) ws.end(code, reason);
    this.unsubscribe();
  }

  private subscribe(): Promise<unknown> {
    if (this.subscriber !== null) return this.subscriber.ready;
    const redis = this.deps.redis.duplicate();
    redis.on('messageBuffer', (_channel: Buffer, message: Buffer) => this.deliver(message));
    const subscriber: Subscriber = { redis, ready: redis.subscribe(this.deps.topology.liveDeliveries()) };
    this.subscriber = subscriber;
    subscriber.ready.then(
      () => this.watchReconnects(subscriber),
      () => {
        if (this.subscriber === subscriber) this.unsubscribe();
      },
    );
    return subscriber.ready;
  }

  /**
   * ioredis reconnects and resubscribes by itself, but what was published in between is gone. At
   * `ready` (emitted before any reply on the new connection is read) every open connection is
   * marked as having missed an unknown number of records, so its gap notice precedes every record
   * that follows. Upgrades wait for the answer to our own SUBSCRIBE, as for the first one.
   */
  private watchReconnects(subscriber: Subscriber): void {
    let lost = false;
    subscriber.redis.on('close', () => void (lost = true));
    subscriber.redis.on('ready', () => {
      if (!lost || this.subscriber !== subscriber) return;
      lost = false;
      for (const ws of this.sockets) ws.getUserData().missed = null;
      subscriber.ready = subscriber.redis.subscribe(this.deps.topology.liveDeliveries());
      subscriber.ready.then(
        () => this.resubscribed(),
        (err: unknown) => {
          this.deps.log.warn('live tail: resubscription failed; its connections are closed', { err });
          if (this.subscriber === subscriber) this.closeAllWith(1011, 'live tail unavailable');
        },
      );
    });
  }

  /** Connections that got no record since the resubscription get their gap notice now. */
  private resubscribed(): void {
    this.deps.log.warn('live tail: resubscribed after a lost connection; records published meanwhile were missed', { connections: this.sockets.size });
    for (const ws of this.sockets) ws.cork(() => this.drain(ws));
  }

  /** No connection open and none about to: nobody needs the records. */
  private unsubscribeIfIdle(): void {
    if (this.sockets.size === 0 && this.upgrading === 0) this.unsubscribe();
  }

  private unsubscribe(): void {
    this.subscriber?.redis.disconnect();
    this.subscriber = null;
  }

  /** One published insert: parsed once, then each connection gets the records of its project and filters. */
  private deliver(message: Buffer): void {
    if (this.sockets.size === 0) return;
    const records: Outcome[] = [];
    for (const line of message.toString('utf8').split('\n')) {
      if (line === '') continue;
      try {
        records.push(JSON.parse(line) as Outcome);
      } catch (err) {
        this.deps.log.warn('live tail: a published line is not JSON', { err });
      }
    }
    for (const ws of this.sockets) {
      const viewer = ws.getUserData();
      const mine = records.filter((r) => r.project === viewer.project && viewer.matches(r));
      if (mine.length === 0) continue;
      ws.cork(() => {
        for (let i = 0; i < mine.length; i += FRAME_RECORDS) this.send(ws, mine.slice(i, i + FRAME_RECORDS).map(delivery));
      });
    }
  }

  private send(ws: Socket<Viewer>, deliveries: MessageDelivery[]): void {
    const viewer = ws.getUserData();
    if (ws.getBufferedAmount() > MAX_BUFFERED) return this.drop(viewer, deliveries.length);
    if (viewer.missed !== 0 && !this.sendGap(ws)) return this.drop(viewer, deliveries.length);
    if (ws.send(JSON.stringify({ deliveries }), false) === 2) this.drop(viewer, deliveries.length);
  }

  /** Tells the connection how many records it missed (null: unknown); false if that could not be queued. */
  private sendGap(ws: Socket<Viewer>): boolean {
    const viewer = ws.getUserData();
    if (ws.send(JSON.stringify({ gap: { missed: viewer.missed } }), false) === 2) return false;
    viewer.missed = 0;
    return true;
  }

  private drop(viewer: Viewer, count: number): void {
    if (viewer.missed !== null) viewer.missed += count;
    this.deps.metrics.liveDropped.inc(count);
  }
}

/** The test of a connection's filters (the same as GET /api/deliveries, time bounds on `at`). */
function matcher(q: LiveQuery): (r: Outcome) => boolean {
  const since = q.since === undefined ? -Infinity : Date.parse(q.since);
  const until = q.until === undefined ? Infinity : Date.parse(q.until);
  return (r) =>
    (q.status === undefined || r.status === q.status) &&
    (q.channel === undefined || r.channel === q.channel) &&
    (q.subscription_type === undefined || r.subscription_type === q.subscription_type) &&
    (q.external_id === undefined || r.external_id === q.external_id) &&
    (q.notification_id === undefined || r.notification_id === q.notification_id) &&
    (q.error_code === undefined || r.error_code === q.error_code) &&
    r.at >= since &&
    r.at < until;
}

/** A delivery record (docs/api.md#the-delivery-record) of a published record; receipts come later, so none yet. */
function delivery(r: Outcome): MessageDelivery {
  return {
    id: r.id,
    notification_id: r.notification_id,
    external_id: r.external_id,
    channel: r.channel,
    subscription_type: r.subscription_type,
    token_tail: r.token_tail,
    attempt: r.attempt,
    status: r.status,
    error_code: r.error_code,
    hint: r.hint,
    provider_message_id: r.provider_message_id,
    latency_ms: r.latency_ms,
    at: new Date(r.at).toISOString(),
    receipt: null,
    retrying: r.retrying,
  };
}
