import { connect, createServer, type Server, type Socket } from 'node:net';

/** RESP replies of a read that found nothing (RESP2 nil array, RESP3 null): nothing to lose. */
const emptyReplies = new Set(['*-1\r\n', '_\r\n']);

/**
 * A TCP proxy in front of a Redis server that can lose the reply of one command: armed, it
 * swallows the next reply to that command (a non-empty one, for reads) and cuts that client's
 * connection, as a network failure or a Redis killed right after running the command would.
 * Redis has run the command (a read's entries are pending in the group, an XADD's entry is in the
 * stream), and the client never learns its result.
 */
export class ReplyDropper {
  private readonly sockets = new Set<Socket>();
  private armed: { command: RegExp; done: () => void } | undefined;

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

  /**
   * Resolves once the next non-empty reply to `command` (XREADGROUP, XADD) has been swallowed and
   * its connection cut. Meant for a connection that sends that command one at a time.
   */
  dropNextReply(command: string): Promise<void> {
    return new Promise((done) => (this.armed = { command: new RegExp(`\\b${command}\\b`, 'i'), done }));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, target: { host: string; port: number }): void {
    const upstream = connect(target.port, target.host);
    this.sockets.add(client).add(upstream);
    // The command is sent one at a time, each waiting for its reply: what comes back after it
    // was sent starts its reply. It may have been sent before the proxy was armed.
    let sent = '';
    client.on('data', (data: Buffer) => {
      sent = data.toString('latin1');
      upstream.write(data);
    });
    upstream.on('data', (data: Buffer) => {
      const armed = this.armed?.command.test(sent) ? this.armed : undefined;
      sent = '';
      if (armed && !emptyReplies.has(data.toString('latin1'))) {
        this.armed = undefined;
        client.destroy();
        upstream.destroy();
        armed.done();
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
