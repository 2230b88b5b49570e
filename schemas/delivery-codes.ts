/**
 * The one registry of delivery error codes (docs/providers.md#delivery-error-codes): what the
 * dispatch actor does with each answer and the hint an operator reads on a MessageDelivery.
 * A code a provider invents later (`apns_400_SomethingNew`) is not listed; `deliveryCode` maps it
 * by rule (a 429 or 5xx is retried, any other 4xx fails) so every answer gets an action and a hint.
 */

/**
 * OK: accepted. RETRY: back off with jitter, honour Retry-After. REAUTH: refresh the credential
 * and retry once. DROP: the token is dead, retire the subscription. FAIL: permanent for this
 * message, keep the token.
 */
export type DeliveryAction = 'OK' | 'RETRY' | 'REAUTH' | 'DROP' | 'FAIL';

/** A provider that delivery codes are named after. */
export type DeliveryProvider = 'apns' | 'fcm' | 'webpush' | 'twilio' | 'sendgrid';

export interface DeliveryCodeDef {
  action: Exclude<DeliveryAction, 'OK'>;
  /** One sentence: what an operator should do. */
  hint: string;
  /** A configuration problem an operator must fix (credentials, topic): worth an alert. */
  alert?: true;
}

const def = (action: DeliveryCodeDef['action'], hint: string, alert?: true): DeliveryCodeDef =>
  alert ? { action, hint, alert } : { action, hint };

const RETIRED = 'The device token is no longer valid; the subscription was retired.';
const APNS_CREDS = 'Check the APNs credential file (team_id, key_id, private_key) with `engine providers set`.';
const RETRIED = 'The provider was busy or failing; the delivery is retried with backoff.';

export const DeliveryCodes = {
  apns_400_BadDeviceToken: def('DROP', RETIRED),
  apns_410_Unregistered: def('DROP', RETIRED),
  apns_410_ExpiredToken: def('DROP', RETIRED),
  apns_400_DeviceTokenNotForTopic: def('DROP', 'The token belongs to another app (topic); the subscription was retired.'),
  apns_403_ExpiredProviderToken: def('REAUTH', 'The APNs provider token expired; it is regenerated and the send retried once (check the host clock if this repeats).'),
  apns_403_InvalidProviderToken: def('FAIL', `APNs rejected the provider token signature. ${APNS_CREDS}`, true),
  apns_403_MissingProviderToken: def('FAIL', `No provider token reached APNs. ${APNS_CREDS}`, true),
  apns_403_Forbidden: def('FAIL', `APNs refused the key for this action. ${APNS_CREDS}`, true),
  apns_400_TopicDisallowed: def('FAIL', 'The key may not push to this topic: set the topic (bundle id) of the credential file to an app of that team.', true),
  apns_400_BadTopic: def('FAIL', 'The apns-topic is invalid: set the topic of the APNs credential file to the app bundle id.', true),
  apns_413_PayloadTooLarge: def('FAIL', 'The APNs payload is over 4096 bytes: shorten the title, body or data.'),
  apns_429_TooManyRequests: def('RETRY', 'Too many pushes to this one device token; retried later.'),
  apns_500_InternalServerError: def('RETRY', RETRIED),
  apns_503_ServiceUnavailable: def('RETRY', 'APNs is unavailable; retried on a new connection with backoff.'),
  apns_503_Shutdown: def('RETRY', 'The APNs server is shutting down; retried on a new connection.'),
  apns_400_IdleTimeout: def('RETRY', 'The APNs connection idled out; retried on a new connection.'),
  apns_429_TooManyProviderTokenUpdates: def('RETRY', 'The APNs provider token was regenerated too often (more than one process per team and key?); retried later with the same token.', true),
  fcm_404_UNREGISTERED: def('DROP', RETIRED),
  fcm_403_SENDER_ID_MISMATCH: def('DROP', 'The token belongs to another Firebase project; the subscription was retired.'),
  fcm_400_INVALID_ARGUMENT: def('FAIL', 'FCM refused the message (payload over 4096 bytes, bad field or token); check the notification content.'),
  fcm_401_UNAUTHENTICATED: def('REAUTH', 'The FCM access token expired; a new one is fetched and the send retried once.'),
  fcm_401_THIRD_PARTY_AUTH_ERROR: def('FAIL', 'The APNs certificate or web push key in the Firebase console is missing or invalid: upload it there.', true),
  fcm_429_QUOTA_EXCEEDED: def('RETRY', 'The FCM sending quota of the project is spent; retried after Retry-After.'),
  fcm_500_INTERNAL: def('RETRY', RETRIED),
  fcm_503_UNAVAILABLE: def('RETRY', 'FCM is overloaded; retried with backoff.'),
  fcm_oauth_failed: def('FAIL', 'Google refused the service account (token_uri): check client_email, private_key and private_key_id of the FCM credential file.', true),
  fcm_oauth_unavailable: def('RETRY', 'The Google OAuth endpoint (token_uri) is unavailable; retried with backoff.'),
  webpush_404: def('DROP', 'The push subscription no longer exists; the subscription was retired.'),
  webpush_410: def('DROP', 'The push subscription expired or was unsubscribed; the subscription was retired.'),
  webpush_429: def('RETRY', 'The push service rate-limits this sender; retried after Retry-After.'),
  webpush_5xx: def('RETRY', 'The push service is failing; retried with backoff.'),
  webpush_400: def('FAIL', 'The push service refused the request as malformed; check the subscription keys and headers.'),
  webpush_401: def('FAIL', 'The push service refused the VAPID signature: check the VAPID keys and subject of the web push credential file.', true),
  webpush_403: def('FAIL', 'The VAPID key does not match the one the subscription was made with: keep the application server key stable or resubscribe.', true),
  webpush_413: def('FAIL', 'The web push payload is over 4096 bytes encrypted: shorten the title, body or data.'),
  twilio_21610: def('DROP', 'The recipient replied STOP; the SMS subscription was retired.'),
  twilio_21211: def('DROP', 'The phone number is invalid; the SMS subscription was retired.'),
  twilio_21614: def('DROP', 'The number is not a mobile number; the SMS subscription was retired.'),
  twilio_20003: def('FAIL', 'Twilio refused the account SID or auth token: fix the Twilio credential file.', true),
  twilio_20429: def('RETRY', 'Twilio rate-limits this account; retried after Retry-After.'),
  sendgrid_429: def('RETRY', 'SendGrid rate-limits this key; retried after X-RateLimit-Reset.'),
  sendgrid_5xx: def('RETRY', 'SendGrid is failing; retried with backoff.'),
  sendgrid_400: def('FAIL', 'SendGrid refused the message as malformed (see its errors); check the from address and content.'),
  sendgrid_401: def('FAIL', 'SendGrid refused the API key: fix the SendGrid credential file.', true),
  sendgrid_403: def('FAIL', 'The SendGrid key lacks mail.send or the from address is not a verified sender.', true),
  sendgrid_413: def('FAIL', 'The email is over the SendGrid size limit: shorten it.'),
  timeout: def('RETRY', 'The provider did not answer in time; retried on a new connection.'),
  connection_error: def('RETRY', 'The connection to the provider failed; retried on a new connection (check network, DNS and PROVIDER_CA_FILE if it repeats).'),
  queue_full: def('RETRY', 'Every connection to the provider was busy and the send queue full; retried later (lower dispatch concurrency if it repeats).'),
  provider_unavailable: def('RETRY', 'The provider left several sends in a row unanswered, so sends to it pause a few seconds and are retried then; nothing was sent (check the provider status and the network if it repeats).'),
  opted_out: def('FAIL', 'The user opted out of this channel; nothing was sent.'),
  no_subscription: def('FAIL', 'The user has no live subscription for this channel; nothing was sent.'),
  canceled: def('FAIL', 'The notification was canceled before this send; nothing was sent.'),
  frequency_capped: def('FAIL', "The user reached the project's frequency cap for this channel; nothing was sent (ignore_frequency_cap on a notification bypasses it)."),
  endpoint_refused: def(
    'FAIL',
    'The Web Push endpoint is a loopback, private, link-local, metadata or other special-purpose address (or off WEBPUSH_HOSTS); nothing was sent. OUTBOUND_ALLOW_PRIVATE=true allows such addresses for local simulators only.',
  ),
  no_credentials: def('FAIL', 'The provider is not configured for this project: add it with `engine providers set`.', true),
} as const satisfies Record<string, DeliveryCodeDef>;

export type DeliveryCode = keyof typeof DeliveryCodes;

export interface DeliveryAnswer {
  code: string;
  action: DeliveryAction;
  hint: string;
}

const registered = (code: string): DeliveryCodeDef | undefined =>
  Object.hasOwn(DeliveryCodes, code) ? DeliveryCodes[code as DeliveryCode] : undefined;

/** `webpush_503` is registered as the pattern `webpush_5xx`. */
function lookup(code: string): DeliveryCodeDef | undefined {
  return registered(code) ?? registered(code.replace(/_5\d\d$/, '_5xx'));
}

/** The rule for an answer nobody registered, by status alone. */
function byRule(status: number, provider?: string): DeliveryCodeDef {
  // APNs 410 always means the token is inactive, whatever reason a newer APNs gives.
  if (provider === 'apns' && status === 410) return DeliveryCodes.apns_410_Unregistered;
  if (status === 429) return def('RETRY', 'The provider rate-limits this sender; retried after Retry-After.');
  if (status >= 500) return def('RETRY', RETRIED);
  if (status === 408) return def('RETRY', 'The provider timed the request out; retried with backoff.');
  if (status === 401 || status === 403) return def('FAIL', 'The provider refused the credentials: check the credential file of this provider.', true);
  return def('FAIL', 'The provider refused this message with an unlisted reason; read the code and the provider documentation.');
}

/** Keeps a provider's reason usable inside a code: letters, digits and `_` only. */
const clean = (reason: string): string => reason.replace(/[^A-Za-z0-9_]/g, '').slice(0, 64);

/** FCM answers INVALID_ARGUMENT for both bad content and bad tokens; only the message tells them apart. */
const FCM_BAD_TOKEN = /registration token|not a valid fcm|invalid token/i;
const FCM_DEAD_TOKEN = def('DROP', 'FCM says the registration token is invalid; the subscription was retired.');

/**
 * The code, action and hint of one provider answer. `reason` is the APNs reason, the FCM errorCode
 * (or status string when there is none), the Twilio numeric code; Web Push and SendGrid codes have
 * the status alone. `message` is the FCM error message (it tells a dead token from bad content).
 */
export function deliveryCode(provider: DeliveryProvider, status: number, reason?: string | number | null, message?: string): DeliveryAnswer {
  if (status >= 200 && status < 300) return { code: `${provider}_${status}`, action: 'OK', hint: 'The provider accepted the message.' };
  let code: string;
  const why = reason === undefined || reason === null ? '' : clean(String(reason));
  switch (provider) {
    case 'apns':
    case 'fcm':
      code = why ? `${provider}_${status}_${why}` : `${provider}_${status}`;
      if (code === 'fcm_400_INVALID_ARGUMENT' && message && FCM_BAD_TOKEN.test(message)) {
        return { code, action: FCM_DEAD_TOKEN.action, hint: FCM_DEAD_TOKEN.hint };
      }
      break;
    case 'twilio':
      code = why ? `twilio_${why}` : `twilio_${status}`;
      break;
    default:
      code = `${provider}_${status}`;
  }
  const found = lookup(code) ?? byRule(status, provider);
  return { code, action: found.action, hint: found.hint };
}

/** A delivery answer for one of our own codes (transport failures and skips). */
export function ownCode(code: 'timeout' | 'connection_error' | 'queue_full' | 'provider_unavailable' | 'opted_out' | 'no_subscription' | 'canceled' | 'no_credentials' | 'endpoint_refused' | 'frequency_capped'): DeliveryAnswer {
  const found = DeliveryCodes[code];
  return { code, action: found.action, hint: found.hint };
}

function defOf(code: string): DeliveryCodeDef {
  const found = lookup(code);
  if (found) return found;
  const [, provider, status] = /^([a-z]+)_(\d{3})(?:_|$)/.exec(code) ?? [];
  return status ? byRule(Number(status), provider) : def('FAIL', 'Unknown delivery code; read the provider documentation.');
}

/** The operator hint of a recorded code, registered or not (by its status when unregistered). */
export const hintOf = (code: string): string => defOf(code).hint;

/** The action of a recorded code, registered or not (by its status when unregistered). */
export const actionOf = (code: string): DeliveryAction => defOf(code).action;
