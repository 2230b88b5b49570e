import type { Test } from 'tap';
import WebSocket from 'ws';

/** A frame of GET /api/deliveries/live, with the test's own view of a record (`missed` null: unknown). */
export type LiveFrame<R> = { deliveries: R[] } | { gap: { missed: number | null } };

export interface LiveTail<R> {
  ws: WebSocket;
  frames: LiveFrame<R>[];
  /** Every record received so far. */
  records(): R[];
}

/**
 * Opens GET /api/deliveries/live at `url` (http or https base, path and query) with the key either
 * in Authorization, as a server-side client sends it, or as the `bearer.<key>` subprotocol, as a
 * browser does; every frame is kept, and the socket is closed when the test ends.
 */
export async function openTail<R>(t: Test, url: string, key: string, carry: 'header' | 'protocol'): Promise<LiveTail<R>> {
  const ws = carry === 'header' ? new WebSocket(url, { headers: { authorization: `Bearer ${key}` } }) : new WebSocket(url, [`bearer.${key}`]);
  t.teardown(() => ws.terminate());
  const frames: LiveFrame<R>[] = [];
  ws.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString()) as LiveFrame<R>));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, frames, records: () => frames.flatMap((f) => ('deliveries' in f ? f.deliveries : [])) };
}
