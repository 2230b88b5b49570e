/**
 * The seam between the route pipeline and an HTTP server (docs/architecture.md#the-http-servers):
 * what a server gives the pipeline for one request. uWebSockets.js (./uws/) and node:http (./node/)
 * both implement it; routes, checks and answers never see which one runs.
 */

export type Header = readonly [string, string];

/** The request side, read during the handler's first call (uWS requests live that long only). */
export interface Request {
  /** A header by its lowercase name, '' when absent. */
  header(name: string): string;
  /** The i-th path parameter, still percent-encoded. */
  param(i: number): string;
  /** The query string without `?`, '' when absent. */
  query(): string;
}

/** The response side of one request. */
export interface Reply {
  /** `cb` runs once if the client goes away before the answer is written. */
  onAborted(cb: () => void): void;
  /** Streams the body; a chunk is valid during the call only, the last call has `isLast`. */
  onData(cb: (chunk: Uint8Array, isLast: boolean) => void): void;
  /** Runs `cb`, its writes coalesced where the server can. */
  cork(cb: () => void): void;
  /** Writes the whole answer: status, headers, body (no Content-Type is added here). */
  end(status: number, headers: readonly Header[], body: string | Uint8Array): void;
}

/** A handler of one HTTP request. */
export type Handler = (reply: Reply, req: Request) => void;

const reasons: Record<number, string> = {
  101: 'Switching Protocols',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The reason phrase both servers send with a status, whatever their own tables say. */
export function reasonPhrase(status: number): string {
  return reasons[status] ?? '';
}

/** A server listening: its port, and how to stop listening (open connections stay). */
export interface Listening {
  port: number;
  close(): void;
}
