import type { ApnsCredentials, FcmCredentials, SendGridCredentials, TwilioCredentials, WebPushCredentials } from '../schemas/providers.ts';

/** One request a simulator received, as `GET /__sim/requests` lists it. */
export interface SimRequest {
  /** Epoch ms when it arrived. */
  at: number;
  method: string;
  /** Path and query as sent. */
  path: string;
  /** Lowercased names; HTTP/2 pseudo-headers are left out. */
  headers: Record<string, string>;
  /** Parsed JSON or form object; for web push the decrypted plaintext string (undefined if it did not decrypt). */
  body: unknown;
  /** What the simulator answered; 0 while a delayed answer is pending or when it sent GOAWAY instead. */
  status: number;
}

/**
 * A scripted answer: the first rule (in the order added) whose every given `match` field fits
 * answers instead of the simulator, `times` times (default: until reset).
 */
export interface ScriptRule {
  match: {
    /** Substring of the request path. */
    path?: string;
    /** Device token (APNs, FCM), phone number (Twilio `To`), email (any SendGrid recipient), endpoint id (web push). */
    token?: string;
  };
  respond: {
    status: number;
    /** An object is sent as JSON, a string as is. */
    body?: unknown;
    headers?: Record<string, string>;
    /** Wait this long before answering. */
    delayMs?: number;
    /** Answer only once `release()` is called (after `delayMs`, if any): a test waits for a condition, not for time. */
    hold?: boolean;
    /** APNs only: send GOAWAY {"reason":"Shutdown"} and refuse the stream instead of answering. */
    goaway?: boolean;
  };
  times?: number;
}

export interface Sim<C> {
  /** Base URL, e.g. https://127.0.0.1:PORT. */
  url: string;
  /** A credential file the engine accepts, pointing at this simulator. */
  credentials(): C;
  script(rule: ScriptRule): Promise<void>;
  /** Answers every request a `hold` rule holds, and drops those rules: later requests are not held. */
  release(): Promise<void>;
  /** Every request received, in order (the last 100k). */
  requests(): Promise<SimRequest[]>;
  /** Forgets requests, scripts and protocol state (APNs token history). */
  reset(): Promise<void>;
}

export interface WebPushSubscription {
  /** The https endpoint on the simulator. */
  token: string;
  /** base64url auth secret. */
  web_auth: string;
  /** base64url uncompressed P-256 public key. */
  web_p256: string;
}

export interface Simulators {
  /** PEM of the self-signed certificate every TLS simulator uses. */
  caFile: string;
  apns: Sim<ApnsCredentials>;
  fcm: Sim<FcmCredentials> & {
    /** OAuth token requests (`POST /token`), kept apart from the message sends. */
    tokenRequests(): Promise<SimRequest[]>;
    /** Forget every access token issued so far: the next send with one gets 401 UNAUTHENTICATED. */
    expireAccessTokens(): Promise<void>;
  };
  webpush: Sim<WebPushCredentials> & {
    /** A new browser-like subscription whose private key the simulator keeps, to decrypt. */
    subscription(): WebPushSubscription;
    /** An endpoint for keys a browser (a test) holds: its pushes are logged encrypted, body `{ encrypted: <base64url> }`. */
    receiver(keys: { web_p256: string; web_auth: string }): WebPushSubscription;
  };
  twilio: Sim<TwilioCredentials> & {
    /** With `From` (default) or with a messaging service sid the simulator also accepts. */
    credentials(kind?: 'from' | 'messaging_service'): TwilioCredentials;
    /**
     * How the next messages to a number end: a request with `StatusCallback` gets signed posts of
     * `sent` then the final status (default delivered) with `ErrorCode` (`POST /__sim/delivery`).
     */
    scriptDelivery(rule: DeliveryRule): Promise<void>;
    /** Every StatusCallback posted, with its signature and the answer (`GET /__sim/callbacks`). */
    callbacks(): Promise<CallbackRecord[]>;
  };
  sendgrid: Sim<SendGridCredentials>;
  close(): Promise<void>;
}

export type SimName = 'apns' | 'fcm' | 'webpush' | 'twilio' | 'sendgrid';

/** How a message sent to a number ends, as the StatusCallback reports it. */
export interface DeliveryRule {
  match: { token?: string };
  /** Final MessageStatus (default for unscripted messages: delivered). */
  status: 'delivered' | 'undelivered' | 'failed' | 'sent' | 'read';
  /** ErrorCode of the callback, e.g. 30003 unreachable, 30005 unknown handset, 30007 filtered. */
  error_code?: number;
  /** Wait before the final callback (default 10 ms after `sent`). */
  delayMs?: number;
  times?: number;
}

/** One StatusCallback the simulator posted. */
export interface CallbackRecord {
  at: number;
  url: string;
  params: Record<string, string>;
  /** X-Twilio-Signature sent with it. */
  signature: string;
  /** What the callback URL answered; 0 when the post failed. */
  status: number;
}
