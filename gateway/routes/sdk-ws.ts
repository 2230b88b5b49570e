import { SocketAnswer } from '../../schemas/sdk.ts';
import { socketRoute } from '../server/route.ts';
import { SdkSocketChannel } from '../ws/sdk-channel.ts';

export const sdkSocket = socketRoute({
  path: '/api/sdk/ws',
  summary:
    'WebSocket channel (API.md section 3.2): key in Authorization or as subprotocol bearer.<key>; each text frame is one batch operation plus `seq`, answered with {seq, accepted} or {seq, errors}',
  answers: { 101: SocketAnswer },
  // A plain GET without an upgrade is a validation_failed.
  errors: ['validation_failed'],
  channel: (deps, answers) => new SdkSocketChannel(deps, answers),
});
