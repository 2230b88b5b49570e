import { readFileSync } from 'node:fs';
import type { ApnsCredentials, FcmCredentials, SendGridCredentials, TwilioCredentials, WebPushCredentials } from '../schemas/providers.ts';
import { apnsSimulator, APNS_RAISED_STREAMS } from './apns.ts';
import { control, type ControlTarget } from './control.ts';
import { fcmSimulator } from './fcm.ts';
import { sendGridSimulator } from './sendgrid.ts';
import { startSimServer, type Protocol, type SimServer, type SimServerOptions } from './server.ts';
import { makeCert } from './tls.ts';
import type { CallbackRecord, DeliveryRule, ScriptRule, SimName, SimRequest, Simulators } from './types.ts';
import { twilioSimulator } from './twilio.ts';
import { webPushSimulator } from './webpush.ts';

export type { ScriptRule, Sim, SimName, SimRequest, Simulators, WebPushSubscription } from './types.ts';
export type { CallbackRecord, DeliveryRule } from './types.ts';
export { twilioSignature } from './twilio-callbacks.ts';
export { APNS_RAISED_STREAMS };

export interface StartOptions {
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Fixed ports; 0 or absent picks a free one. */
  ports?: Partial<Record<SimName, number>>;
  /**
   * Identities (keys, ids, secrets) to keep from earlier credential files instead of generating
   * new ones, so files registered with the engine stay valid across restarts; base_url is ignored.
   */
  reuse?: Partial<{ apns: ApnsCredentials; fcm: FcmCredentials; webpush: WebPushCredentials; twilio: TwilioCredentials; sendgrid: SendGridCredentials }>;
}

/**
 * Starts the five provider simulators (docs/providers.md): APNs and FCM over HTTP/2 with TLS, web push
 * over HTTPS, Twilio and SendGrid over plain HTTP/1.1. They share one self-signed certificate,
 * `caFile`. Demo mode: with no script, every well-formed, well-authenticated request succeeds.
 */
export async function startSimulators(opts: StartOptions = {}): Promise<Simulators> {
  const host = opts.host ?? '127.0.0.1';
  const cert = await makeCert(host);
  const ca = readFileSync(cert.caFile, 'utf8');
  const tls = { cert: cert.cert, key: cert.key };
  const started: SimServer[] = [];

  const start = async (name: SimName, protocol: Protocol, extra: Partial<SimServerOptions> & Pick<SimServerOptions, 'transport'>): Promise<SimServer> => {
    const server = await startSimServer({ host, port: opts.ports?.[name] ?? 0, protocol, ...extra });
    started.push(server);
    return server;
  };

  try {
    const apns = apnsSimulator(opts.reuse?.apns);
    const fcm = fcmSimulator(opts.reuse?.fcm);
    const webpush = webPushSimulator(opts.reuse?.webpush);
    const twilio = twilioSimulator(opts.reuse?.twilio);
    const sendgrid = sendGridSimulator(opts.reuse?.sendgrid);
    // APNs answers 1 stream per connection until a push is accepted (docs/providers.md#apns).
    const apnsServer = await start('apns', apns.protocol, { transport: 'h2', tls, settings: { maxConcurrentStreams: 1 } });
    const fcmServer = await start('fcm', fcm.protocol, { transport: 'h2', tls, allowHTTP1: true, settings: { maxConcurrentStreams: 100 } });
    const webpushServer = await start('webpush', webpush.protocol, { transport: 'https', tls });
    const twilioServer = await start('twilio', twilio.protocol, { transport: 'http' });
    const sendgridServer = await start('sendgrid', sendgrid.protocol, { transport: 'http' });
    apns.bind(apnsServer.url);
    fcm.bind(fcmServer.url);
    webpush.bind(webpushServer.url);
    twilio.bind(twilioServer.url);
    sendgrid.bind(sendgridServer.url);

    const targetOf = (server: SimServer): ControlTarget => ({ url: server.url, h2: server.transport === 'h2', ca });
    const surface = (server: SimServer) => {
      const target = targetOf(server);
      return {
        url: server.url,
        script: async (rule: ScriptRule) => void (await control(target, 'POST', '/__sim/script', rule)),
        release: async () => void (await control(target, 'POST', '/__sim/release')),
        requests: async () => (await control(target, 'GET', '/__sim/requests')) as SimRequest[],
        reset: async () => void (await control(target, 'POST', '/__sim/reset')),
      };
    };
    const fcmTarget = targetOf(fcmServer);
    const twilioTarget = targetOf(twilioServer);

    let closing: Promise<void> | null = null;
    return {
      caFile: cert.caFile,
      apns: { ...surface(apnsServer), credentials: apns.credentials },
      fcm: {
        ...surface(fcmServer),
        credentials: fcm.credentials,
        tokenRequests: async () => (await control(fcmTarget, 'GET', '/__sim/token-requests')) as SimRequest[],
        expireAccessTokens: async () => void (await control(fcmTarget, 'POST', '/__sim/expire-tokens')),
      },
      webpush: { ...surface(webpushServer), credentials: webpush.credentials, subscription: webpush.subscription, receiver: webpush.receiver },
      twilio: {
        ...surface(twilioServer),
        credentials: twilio.credentials,
        scriptDelivery: async (rule: DeliveryRule) => void (await control(twilioTarget, 'POST', '/__sim/delivery', rule)),
        callbacks: async () => (await control(twilioTarget, 'GET', '/__sim/callbacks')) as CallbackRecord[],
      },
      sendgrid: { ...surface(sendgridServer), credentials: sendgrid.credentials },
      close: () => {
        closing ??= Promise.all(started.map((s) => s.close())).then(() => cert.remove());
        return closing;
      },
    };
  } catch (err) {
    await Promise.all(started.map((s) => s.close()));
    await cert.remove();
    throw err;
  }
}
