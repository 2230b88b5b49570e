import { ownCode } from '../../../schemas/delivery-codes.ts';
import type {
  ApnsCredentials,
  FcmCredentials,
  ProviderName,
  SendGridCredentials,
  TwilioCredentials,
  WebPushCredentials,
} from '../../../schemas/providers.ts';
import { ApnsClient } from './apns.ts';
import { Breaker, breakerOptions } from './breaker.ts';
import { FcmClient } from './fcm.ts';
import { failure, type ClientOptions, type ProviderClient, type PushMessage, type SendResult, type Target } from './provider.ts';
import { SendGridClient } from './sendgrid.ts';
import { TwilioClient } from './twilio.ts';
import { WebPushClient } from './webpush.ts';

export type { PushMessage, ProviderClient, SendResult, SendFailure, Target, ClientOptions } from './provider.ts';
export { ApnsClient, FcmClient, WebPushClient, TwilioClient, SendGridClient };

/** The credential files of one project, by provider; a missing one means not configured. */
export interface ProjectCredentials {
  apns?: ApnsCredentials;
  fcm?: FcmCredentials;
  webpush?: WebPushCredentials;
  twilio?: TwilioCredentials;
  sendgrid?: SendGridCredentials;
}

export type ProviderClients = Partial<Record<ProviderName, ProviderClient>>;

/** The provider that serves a subscription type. */
export function providerFor(type: Target['type']): ProviderName {
  switch (type) {
    case 'IOS_PUSH':
      return 'apns';
    case 'ANDROID_PUSH':
      return 'fcm';
    case 'WEB_PUSH':
      return 'webpush';
    case 'SMS':
      return 'twilio';
    case 'EMAIL':
      return 'sendgrid';
  }
}

/**
 * One client per configured provider of a project, each behind its own circuit breaker
 * (./breaker.ts), long-lived: keep them, close them at shutdown.
 */
export function createProviderClients(creds: ProjectCredentials, opts: ClientOptions = {}): ProviderClients {
  const clients: ProviderClients = {};
  const breaker = breakerOptions(opts.timeoutMs);
  if (creds.apns) clients.apns = new Breaker(new ApnsClient(creds.apns, opts), breaker);
  if (creds.fcm) clients.fcm = new Breaker(new FcmClient(creds.fcm, opts), breaker);
  if (creds.webpush) clients.webpush = new Breaker(new WebPushClient(creds.webpush, opts), breaker);
  if (creds.twilio) clients.twilio = new Breaker(new TwilioClient(creds.twilio, opts), breaker);
  if (creds.sendgrid) clients.sendgrid = new Breaker(new SendGridClient(creds.sendgrid, opts), breaker);
  return clients;
}

/** Sends through the client of the target's provider; `no_credentials` when the project has none. */
export function sendTo(clients: ProviderClients, target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
  const client = clients[providerFor(target.type)];
  if (!client) return Promise.resolve(failure(ownCode('no_credentials'), null));
  return client.send(target, message, signal);
}

/** Closes every client; in-flight sends finish first. */
export async function closeProviderClients(clients: ProviderClients): Promise<void> {
  await Promise.all(Object.values(clients).map((client) => client.close()));
}
