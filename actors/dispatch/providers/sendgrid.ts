import { DefaultBaseUrls, type SendGridCredentials } from '../../../schemas/providers.ts';
import { Http1, type Http1Answer } from './http1.ts';
import {
  answered,
  elapsed,
  rateLimitResetMs,
  retryAfterMs,
  transportFailure,
  type ClientOptions,
  type ProviderClient,
  type PushMessage,
  type SendResult,
  type Target,
} from './provider.ts';

/**
 * The mail of one message: subject = title (or the start of the body); a text/plain body, or HTML
 * when it came as OneSignal's `email_body`, with the preheader as hidden text before it; the
 * sender from the options over the credentials' (docs/providers.md#what-each-provider-gets).
 */
export function sendGridBody(to: string, from: string, message: PushMessage): string {
  const o = message.options;
  const subject = message.title ?? (message.body.split('\n', 1)[0] ?? '').slice(0, 78);
  const custom: Record<string, string> = { notification_id: message.notificationId };
  const svc = message.data.svc_message_id;
  if (typeof svc === 'string') custom.svc_message_id = svc;
  return JSON.stringify({
    personalizations: [{ to: [{ email: to }] }],
    from: { email: o.email_from_address ?? from, ...(o.email_from_name === undefined ? {} : { name: o.email_from_name }) },
    subject,
    content: [o.email_html === true ? { type: 'text/html', value: preheaderOf(o.email_preheader) + message.body } : { type: 'text/plain', value: message.body }],
    // Echoed on SendGrid's event webhook, so receipts find their message.
    custom_args: custom,
  });
}

/** The preheader as mail clients show it after the subject, hidden in the body itself. */
function preheaderOf(text: string | undefined): string {
  return text === undefined ? '' : `<div style="display:none;max-height:0;overflow:hidden">${escapeHtml(text)}</div>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * SendGrid v3 mail/send over pooled HTTP/1.1. 202 is accepted, with `X-Message-Id` as the
 * provider id; 429 is retried after `X-RateLimit-Reset` (or Retry-After), 5xx with backoff.
 */
export class SendGridClient implements ProviderClient {
  readonly #creds: SendGridCredentials;
  readonly #http: Http1;
  readonly #url: string;

  constructor(creds: SendGridCredentials, opts: ClientOptions = {}) {
    this.#creds = creds;
    this.#http = new Http1({ ca: opts.ca, timeoutMs: opts.timeoutMs });
    this.#url = `${(creds.base_url ?? (DefaultBaseUrls.sendgrid as string)).replace(/\/+$/, '')}/v3/mail/send`;
  }

  async send(target: Target, message: PushMessage, signal?: AbortSignal): Promise<SendResult> {
    const start = performance.now();
    let answer: Http1Answer;
    try {
      answer = await this.#http.post(
        this.#url,
        { authorization: `Bearer ${this.#creds.api_key}`, 'content-type': 'application/json' },
        sendGridBody(target.token, this.#creds.from, message),
        signal,
      );
    } catch (err) {
      return transportFailure(err, elapsed(start));
    }
    const latencyMs = elapsed(start);
    if (answer.status >= 200 && answer.status < 300) {
      const id = answer.headers['x-message-id'];
      return { ok: true, providerMessageId: typeof id === 'string' ? id : null, latencyMs };
    }
    const wait = retryAfterMs(answer.headers['retry-after']) ?? (answer.status === 429 ? rateLimitResetMs(answer.headers['x-ratelimit-reset']) : null);
    return answered('sendgrid', answer.status, null, latencyMs, wait);
  }

  close(): Promise<void> {
    return this.#http.close();
  }
}
