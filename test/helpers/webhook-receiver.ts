import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One event a receiver took (answered 2xx), its signature checked with the standardwebhooks package. */
export interface Received {
  id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  verified: boolean;
}

/** How the receiver answers: a status (200, 410, 503…), after `delayMs`. */
export interface Behaviour {
  status: number;
  delayMs?: number;
  retryAfter?: string;
}

/**
 * A webhook receiver on loopback that verifies each POST with the `standardwebhooks` package and
 * keeps the events it accepted, in arrival order. `down()` closes its port (connections refused)
 * and `up()` opens the same port again.
 */
export class WebhookReceiver {
  readonly accepted: Received[] = [];
  /** Every POST, accepted or not: its webhook-id. */
  readonly posts: string[] = [];
  behaviour: Behaviour = { status: 200 };
  secret = '';
  private server: Server | undefined;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.posts.push(String(req.headers['webhook-id']));
        const { status, delayMs = 0, retryAfter } = this.behaviour;
        setTimeout(() => {
          if (status >= 200 && status < 300) this.accepted.push(this.read(body, req.headers));
          res.writeHead(status, retryAfter === undefined ? {} : { 'retry-after': retryAfter }).end();
        }, delayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Accepted events of one type. */
  of(type: string): Received[] {
    return this.accepted.filter((e) => e.type === type);
  }

  private read(body: string, headers: IncomingHttpHeaders): Received {
    let verified = false;
    try {
      new Webhook(this.secret).verify(body, headers as Record<string, string>);
      verified = true;
    } catch {
      verified = false;
    }
    const event = JSON.parse(body) as Omit<Received, 'headers' | 'verified'>;
    return { ...event, headers, verified };
  }
}
