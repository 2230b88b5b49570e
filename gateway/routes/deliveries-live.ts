import { LiveFrame, LiveQuery } from '../../schemas/queries.ts';
import { socketRoute } from '../server/route.ts';
import { LiveTailChannel } from '../ws/live-tail.ts';

export const deliveriesLive = socketRoute({
  path: '/api/deliveries/live',
  auth: 'rest',
  summary:
    'WebSocket: every new delivery record as the recorder writes it, narrowed by the filters of GET /api/deliveries; key in Authorization or as subprotocol bearer.<key>. Frames: {deliveries: [...]}, or {gap: {missed: N}} when records were dropped because the connection read too slowly, or {gap: {missed: null}} when the gateway resubscribed to Redis after losing its connection (how many were missed is unknown)',
  query: LiveQuery,
  answers: { 101: LiveFrame },
  channel: ({ deps }) => new LiveTailChannel(deps),
});
