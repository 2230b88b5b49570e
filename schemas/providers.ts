import Type, { type Static, type TSchema } from 'typebox';
import type { ProviderName } from './provider-names.ts';

export { ProviderNames, type ProviderName } from './provider-names.ts';

/**
 * Provider credential files of `engine providers set <project> <provider> --file f`
 * (docs/providers.md#credential-files). `base_url` defaults to the provider's public endpoint; an http:// base URL (clear
 * text HTTP/2 for APNs and FCM) lets a local simulator stand in.
 */
const BaseUrl = Type.String({ pattern: '^https?://[^\\s]+$' });
const Pem = Type.String({ pattern: '-----BEGIN [A-Z ]*PRIVATE KEY-----' });

export const ApnsCredentials = Type.Object(
  {
    team_id: Type.String({ minLength: 1 }),
    key_id: Type.String({ minLength: 1 }),
    private_key: Pem,
    topic: Type.String({ minLength: 1 }),
    environment: Type.Union([Type.Literal('production'), Type.Literal('sandbox')]),
    base_url: Type.Optional(BaseUrl),
  },
  { additionalProperties: false },
);

export const FcmCredentials = Type.Object(
  {
    service_account: Type.Object({
      project_id: Type.String({ minLength: 1 }),
      client_email: Type.String({ minLength: 1 }),
      private_key: Pem,
      private_key_id: Type.String({ minLength: 1 }),
      token_uri: BaseUrl,
    }),
    base_url: Type.Optional(BaseUrl),
  },
  { additionalProperties: false },
);

export const WebPushCredentials = Type.Object(
  {
    vapid_public_key: Type.String({ minLength: 1 }),
    vapid_private_key: Type.String({ minLength: 1 }),
    subject: Type.String({ pattern: '^(mailto:|https:)' }),
  },
  { additionalProperties: false },
);

export const TwilioCredentials = Type.Union([
  Type.Object(
    { account_sid: Type.String({ minLength: 1 }), auth_token: Type.String({ minLength: 1 }), from: Type.String({ minLength: 1 }), base_url: Type.Optional(BaseUrl) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      account_sid: Type.String({ minLength: 1 }),
      auth_token: Type.String({ minLength: 1 }),
      messaging_service_sid: Type.String({ minLength: 1 }),
      base_url: Type.Optional(BaseUrl),
    },
    { additionalProperties: false },
  ),
]);

export const SendGridCredentials = Type.Object(
  { api_key: Type.String({ minLength: 1 }), from: Type.String({ minLength: 3 }), base_url: Type.Optional(BaseUrl) },
  { additionalProperties: false },
);

export const ProviderCredentials = {
  apns: ApnsCredentials,
  fcm: FcmCredentials,
  webpush: WebPushCredentials,
  twilio: TwilioCredentials,
  sendgrid: SendGridCredentials,
} as const satisfies Record<ProviderName, TSchema>;

/** The public endpoint each provider uses when a credential file names no base_url. */
export const DefaultBaseUrls: Record<ProviderName, string | null> = {
  apns: 'https://api.push.apple.com',
  fcm: 'https://fcm.googleapis.com',
  webpush: null,
  twilio: 'https://api.twilio.com',
  sendgrid: 'https://api.sendgrid.com',
};

export type ApnsCredentials = Static<typeof ApnsCredentials>;
export type FcmCredentials = Static<typeof FcmCredentials>;
export type WebPushCredentials = Static<typeof WebPushCredentials>;
export type TwilioCredentials = Static<typeof TwilioCredentials>;
export type SendGridCredentials = Static<typeof SendGridCredentials>;
