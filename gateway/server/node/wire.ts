import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { reasonPhrase, type Header, type Reply, type Request } from '../wire.ts';

const EMPTY = new Uint8Array(0);

/** A node:http response as the pipeline's Reply. */
export class NodeReply implements Reply {
  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {}

  onAborted(cb: () => void): void {
    this.res.once('close', () => {
      if (!this.res.writableEnded) cb();
    });
  }

  onData(cb: (chunk: Uint8Array, isLast: boolean) => void): void {
    this.req.on('data', (chunk: Buffer) => cb(chunk, false));
    this.req.once('end', () => cb(EMPTY, true));
  }

  cork(cb: () => void): void {
    cb();
  }

  /** With Content-Length, as uWS sends it: writeHead alone would make node answer chunked. */
  end(status: number, headers: readonly Header[], body: string | Uint8Array): void {
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    this.res.writeHead(status, reasonPhrase(status), status === 204 ? headers.flat() : [...headers.flat(), 'Content-Length', String(length)]);
    this.res.end(body);
  }
}

/**
 * The answer to an upgrade request that is not opened (refused, or on a path without a
 * WebSocket): node:http hands such a request over as a bare socket, so the answer is written on
 * it and the connection closed. Its body, if any, is not read.
 */
export class RawReply implements Reply {
  constructor(private readonly socket: Duplex) {}

  onAborted(cb: () => void): void {
    this.socket.once('close', cb);
  }

  onData(cb: (chunk: Uint8Array, isLast: boolean) => void): void {
    cb(EMPTY, true);
  }

  cork(cb: () => void): void {
    cb();
  }

  end(status: number, headers: readonly Header[], body: string | Uint8Array): void {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const head = [`HTTP/1.1 ${status} ${reasonPhrase(status)}`, ...headers.map(([n, v]) => `${n}: ${v}`), `Content-Length: ${bytes.byteLength}`, 'Connection: close'];
    this.socket.end(Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), bytes]));
  }
}

/** A node:http request as the pipeline's Request. */
export class NodeRequest implements Request {
  constructor(
    private readonly req: IncomingMessage,
    private readonly params: readonly string[],
    private readonly rawQuery: string,
  ) {}

  /** Repeated headers: node keeps the first Authorization or Content-Type and joins most others with `, `. */
  header(name: string): string {
    const value = this.req.headers[name];
    return typeof value === 'string' ? value : (value?.[0] ?? '');
  }

  param(i: number): string {
    return this.params[i] ?? '';
  }

  query(): string {
    return this.rawQuery;
  }
}
