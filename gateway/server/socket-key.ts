import type { HttpRequest } from 'uWebSockets.js';
import { bearerKey } from './auth.ts';

/**
 * The key of a WebSocket upgrade (API.md section 3.2): in `Authorization`, or for browsers, which
 * cannot set headers, as the subprotocol `bearer.<key>`. `protocol` is the one to echo: the one
 * that carried the key, else the client's first.
 */
export function upgradeKey(req: HttpRequest): { key: string | null; protocol: string } {
  const offered = req
    .getHeader('sec-websocket-protocol')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const bearer = offered.find((p) => p.startsWith('bearer.'));
  const key = bearerKey(req.getHeader('authorization')) ?? (bearer ? bearer.slice('bearer.'.length) || null : null);
  return { key, protocol: bearer ?? offered[0] ?? '' };
}
