/**
 * The providers a project may hold credentials for, in a module of their own: the command line
 * lists them without loading the schemas of their credential files (./providers.ts).
 */
export const ProviderNames = ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'] as const;

export type ProviderName = (typeof ProviderNames)[number];
