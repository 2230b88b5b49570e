import { SocketAnswer } from '../../schemas/sdk.ts';
import { socketRoute } from '../server/route.ts';
import { SdkSocketChannel } from '../ws/sdk-channel.ts';

export const sdkSocket = socketRoute({
  path: '/api/sdk/ws',
  summary:
    'WebSocket channel: key in Authorization or as subprotocol bearer.<key>; each text frame is one batch operation plus `seq`, answered with {seq, accepted} or {seq, errors}',
  answers: { 101: SocketAnswer },
  channel: ({ deps }) => new SdkSocketChannel(deps),
});
