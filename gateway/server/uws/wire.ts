import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { reasonPhrase, type Header, type Reply, type Request } from '../wire.ts';

/** A uWS response as the pipeline's Reply: every write inside res.cork, as uWS wants. */
export class UwsReply implements Reply {
  constructor(private readonly res: HttpResponse) {}

  onAborted(cb: () => void): void {
    this.res.onAborted(cb);
  }

  onData(cb: (chunk: Uint8Array, isLast: boolean) => void): void {
    this.res.onData((chunk, isLast) => cb(new Uint8Array(chunk), isLast));
  }

  cork(cb: () => void): void {
    this.res.cork(cb);
  }

  end(status: number, headers: readonly Header[], body: string | Uint8Array): void {
    const res = this.res;
    res.cork(() => {
      res.writeStatus(`${status} ${reasonPhrase(status)}`);
      for (const [name, value] of headers) res.writeHeader(name, value);
      res.end(body);
    });
  }
}

/** A uWS request as the pipeline's Request; valid during the handler's first call only. */
export class UwsRequest implements Request {
  constructor(private readonly req: HttpRequest) {}

  header(name: string): string {
    return this.req.getHeader(name);
  }

  param(i: number): string {
    return this.req.getParameter(i) ?? '';
  }

  /** uWS returns undefined, not '', for a URL without a query. */
  query(): string {
    return this.req.getQuery() ?? '';
  }
}
