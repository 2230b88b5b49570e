import { DefaultBaseUrls, type TwilioCredentials } from '../../../schemas/providers.ts';
import { Http1, type Http1Answer } from './http1.ts';
import {
  answered,
  elapsed,
  parseJson,
  retryAfterMs,
  transportFailure,
  type ClientOptions,
  type ProviderClient,
  type PushMessage,
  type SendResult,
  type Target,
} from './provider.ts';

export interface TwilioClientOptions extends ClientOptions {
  /** URL Twilio posts delivery statuses to (`StatusCallback`); none when absent. */
  statusCallback?: string;
}

/**
 * Twilio Programmable Messaging over pooled HTTP/1.1: a form POST with Basic auth, From or
 * MessagingServiceSid. The SMS text is the message body alone (no title). Errors are recorded
 * by Twilio's numeric code (`twilio_21610`), or by status when the body has none.
 */
export class TwilioClient implements ProviderClient {
  readonly #creds: TwilioCredentials;
  readonly #http: Http1;
  readonly #url: string;
  readonly #auth: string;
  readonly #statusCallback: string | undefined;

  constructor(creds: TwilioCredentials, opts: TwilioClientOptions = {}) {
    this.#creds = creds;
    this.#http = new Http1({ ca: opts.ca, timeoutMs: opts.timeoutMs });
    const base = (creds.base_url ?? (DefaultBaseUrls.twilio as string)).replace(/\/+$/, '');
    this.#url = `${base}/2010-04-01/Accounts/${encodeURIComponent(creds.account_sid)}/Messages.json`;
    this.#auth = `Basic ${Buffer.from(`${creds.account_sid}:${creds.auth_token}`).toString('base64')}`;
    this.#statusCallback = opts.statusCallback;
  }

  async send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    const form = new URLSearchParams({ To: target.token });
    // A sender named by the notification wins over the credentials' (docs/providers.md#what-each-provider-gets).
    const from = message.options.sms_from;
    if (from !== undefined) form.set('From', from);
    else if ('messaging_service_sid' in this.#creds) form.set('MessagingServiceSid', this.#creds.messaging_service_sid);
    else form.set('From', this.#creds.from);
    form.set('Body', message.body);
    for (const url of message.options.sms_media_urls ?? []) form.append('MediaUrl', url);
    if (this.#statusCallback) form.set('StatusCallback', this.#statusCallback);
    const start = performance.now();
    let answer: Http1Answer;
    try {
      answer = await this.#http.post(
        this.#url,
        { authorization: this.#auth, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        form.toString(),
        signal,
      );
    } catch (err) {
      return transportFailure(err, elapsed(start));
    }
    const latencyMs = elapsed(start);
    const json = parseJson(answer.body) as { sid?: unknown; code?: unknown } | null;
    if (answer.status >= 200 && answer.status < 300) return { ok: true, providerMessageId: typeof json?.sid === 'string' ? json.sid : null, latencyMs };
    const code = typeof json?.code === 'number' || typeof json?.code === 'string' ? json.code : null;
    return answered('twilio', answer.status, code, latencyMs, retryAfterMs(answer.headers['retry-after']));
  }

  close(): Promise<void> {
    return this.#http.close();
  }
}
