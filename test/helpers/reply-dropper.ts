import { connect, createServer, type Server, type Socket } from 'node:net';

/** RESP replies of a read that found nothing (RESP2 nil array, RESP3 null): nothing to lose. */
const emptyReplies = new Set(['*-1\r\n', '_\r\n']);

/**
 * A TCP proxy in front of a Redis server that can lose the reply of one stream read: armed, it
 * swallows the next non-empty reply to an XREADGROUP and cuts that client's connection, as a
 * network failure or a Redis killed right after running the read would. Redis has run the read,
 * so its entries are pending in the group, and the client never learns which they were.
 */
export class ReplyDropper {
  private readonly sockets = new Set<Socket>();
  private armed: (() => void) | undefined;

  private constructor(private readonly server: Server) {}

  static async start(target: { host: string; port: number }): Promise<ReplyDropper> {
    const server = createServer();
    const dropper = new ReplyDropper(server);
    server.on('connection', (client) => dropper.pipe(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return dropper;
  }

  get url(): string {
    const address = this.server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy not listening');
    return `redis://127.0.0.1:${address.port}`;
  }

  /** Resolves once the next non-empty XREADGROUP reply has been swallowed and its connection cut. */
  dropNextReadReply(): Promise<void> {
    return new Promise((resolve) => (this.armed = resolve));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, target: { host: string; port: number }): void {
    const upstream = connect(target.port, target.host);
    this.sockets.add(client).add(upstream);
    // A consumer's reads go one at a time on a connection of their own, each waiting for its
    // reply: what comes back after a read was sent starts that read's reply.
    let reading = false;
    client.on('data', (data: Buffer) => {
      if (/XREADGROUP/i.test(data.toString('latin1'))) reading = true;
      upstream.write(data);
    });
    upstream.on('data', (data: Buffer) => {
      const isRead = reading;
      reading = false;
      if (isRead && this.armed && !emptyReplies.has(data.toString('latin1'))) {
        const done = this.armed;
        this.armed = undefined;
        client.destroy();
        upstream.destroy();
        done();
        return;
      }
      client.write(data);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  }
}
