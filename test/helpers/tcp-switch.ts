import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy to a server on this machine that can be switched off: off, it cuts every connection
 * through it and resets new ones at once, as a server that is down or unreachable would look to
 * its clients; on again, it passes connections as before, on the same port.
 */
export class TcpSwitch {
  private readonly sockets = new Set<Socket>();
  private on = true;

  private constructor(private readonly server: Server) {}

  static async start(target: { host: string; port: number }): Promise<TcpSwitch> {
    const server = createServer();
    const proxy = new TcpSwitch(server);
    server.on('connection', (client) => proxy.pipe(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    const address = this.server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy not listening');
    return address.port;
  }

  /** Cuts every connection now; new ones are reset until `switchOn`. */
  switchOff(): void {
    this.on = false;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  switchOn(): void {
    this.on = true;
  }

  async close(): Promise<void> {
    this.switchOff();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, target: { host: string; port: number }): void {
    if (!this.on) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
