import { connect } from 'node:net';

/**
 * HTTP/1.1 over a plain socket, one request per connection, for tests that send what fetch would
 * refuse or rewrite: any request target (bad percent-encoding, `..`), any header value, any body
 * bytes, a body written in pieces. The answer is read by its Content-Length (or chunked encoding)
 * and the socket is then closed. The connection is keep-alive, as a browser's would be: a server
 * may answer before the body is all sent (401, 415) and must then read on, not reset the connection.
 */
export interface RawRequest {
  method: string;
  /** The request target exactly as written on the request line (no encoding is applied). */
  target: string;
  /** Written in order, as given; Host is added. */
  headers: readonly (readonly [string, string])[];
  body?: Buffer;
  /** Adds Content-Length: <body length> (default true when there is a body). */
  contentLength?: boolean;
  /** Writes the body in this many pieces, a few milliseconds apart (default 1). */
  pieces?: number;
}

export interface RawAnswer {
  status: number;
  /** Header names lowercased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: Buffer;
}

/** Why a request got no answer: the socket closed first (`dropped`) or nothing came in time (`hang`). */
export class NoAnswer extends Error {
  constructor(
    readonly kind: 'dropped' | 'hang' | 'malformed',
    detail: string,
  ) {
    super(`${kind}: ${detail}`);
  }
}

export function rawRequest(port: number, req: RawRequest, timeoutMs = 5000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (err: Error | null, answer?: RawAnswer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err !== null) reject(err);
      else if (answer !== undefined) resolve(answer);
    };
    const timer = setTimeout(() => settle(new NoAnswer('hang', `no complete answer within ${timeoutMs} ms (${received.length} bytes received)`)), timeoutMs);
    socket.on('error', (err) => {
      // A write may fail after the answer came in (the server answered early, then closed): the answer counts.
      let answer: RawAnswer | null = null;
      try {
        answer = parseAnswer(received, false);
      } catch {
        // Reported as dropped below.
      }
      settle(answer === null ? new NoAnswer('dropped', `socket error ${err.message} (${received.length} bytes received)`) : null, answer ?? undefined);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      try {
        const answer = parseAnswer(received, false);
        if (answer !== null) settle(null, answer);
      } catch (err) {
        settle(err as Error);
      }
    });
    socket.on('end', () => {
      try {
        const answer = parseAnswer(received, true);
        settle(answer === null ? new NoAnswer('dropped', `connection closed after ${received.length} bytes: ${JSON.stringify(received.toString('latin1').slice(0, 200))}`) : null, answer ?? undefined);
      } catch (err) {
        settle(err as Error);
      }
    });
    socket.on('close', () => settle(new NoAnswer('dropped', `connection closed after ${received.length} bytes`)));
    socket.once('connect', () => {
      const body = req.body;
      const lines = [`${req.method} ${req.target} HTTP/1.1`, 'Host: 127.0.0.1'];
      for (const [name, value] of req.headers) lines.push(`${name}: ${value}`);
      if (body !== undefined && req.contentLength !== false) lines.push(`Content-Length: ${body.length}`);
      socket.write(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
      if (body === undefined || body.length === 0) return;
      const pieces = Math.max(1, Math.min(req.pieces ?? 1, body.length));
      const size = Math.ceil(body.length / pieces);
      const writeFrom = (offset: number): void => {
        if (settled || offset >= body.length) return;
        socket.write(body.subarray(offset, offset + size));
        setTimeout(() => writeFrom(offset + size), 2);
      };
      writeFrom(0);
    });
  });
}

/** A complete answer from the bytes so far, or null when more are needed. */
function parseAnswer(bytes: Buffer, ended: boolean): RawAnswer | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd === -1) return null;
  const [statusLine = '', ...headerLines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (match === null) throw new NoAnswer('malformed', `status line ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(match[1]);
  const rest = bytes.subarray(headEnd + 4);
  if (status === 101 || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
  const length = headers['content-length'];
  if (length !== undefined) {
    const n = Number(length);
    if (!Number.isSafeInteger(n) || n < 0) throw new NoAnswer('malformed', `Content-Length ${length}`);
    return rest.length >= n ? { status, headers, body: rest.subarray(0, n) } : null;
  }
  if ((headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) {
    const body = dechunk(rest);
    return body === null ? null : { status, headers, body };
  }
  return ended ? { status, headers, body: rest } : null;
}

function dechunk(bytes: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd === -1) return null;
    const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new NoAnswer('malformed', 'bad chunk size');
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return null;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
