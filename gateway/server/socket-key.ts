import { authorizationKey, keyToken } from './auth.ts';

/**
 * The key of a WebSocket upgrade (docs/api.md#the-websocket-channel): in `Authorization`, or for
 * browsers, which cannot set headers, as the subprotocol `bearer.<key>` (the same rules as the
 * header's). `protocol` is the one to echo: the one that carried the key, else the client's first.
 */
export function upgradeKey(authorization: string, protocols: string): { key: string | null; protocol: string } {
  const offered = protocols
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const bearer = offered.find((p) => p.startsWith('bearer.'));
  const key = authorizationKey(authorization) ?? (bearer === undefined ? null : keyToken(bearer.slice('bearer.'.length)));
  return { key, protocol: bearer ?? offered[0] ?? '' };
}
