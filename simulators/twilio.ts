import { randomBytes } from 'node:crypto';
import type { TwilioCredentials } from '../schemas/providers.ts';
import { isObject, type Answer, type Incoming, type Protocol } from './server.ts';
import { StatusCallbacks } from './twilio-callbacks.ts';

const E164 = /^\+[1-9][0-9]{7,14}$/;
const MAX_BODY_CHARS = 1600;

export interface TwilioSim {
  protocol: Protocol;
  bind(baseUrl: string): void;
  /** With `From` (default) or with the messaging service the simulator also accepts. */
  credentials(kind?: 'from' | 'messaging_service'): TwilioCredentials;
}

/** Twilio Programmable Messaging: the Messages resource of the 2010-04-01 API. */
export function twilioSimulator(reuse?: TwilioCredentials): TwilioSim {
  const accountSid = reuse?.account_sid ?? `AC${randomBytes(16).toString('hex')}`;
  const authToken = reuse?.auth_token ?? randomBytes(16).toString('hex');
  const from = reuse && 'from' in reuse ? reuse.from : '+15005550006';
  const messagingServiceSid = reuse && 'messaging_service_sid' in reuse ? reuse.messaging_service_sid : `MG${randomBytes(16).toString('hex')}`;
  let baseUrl = '';
  const callbacks = new StatusCallbacks(authToken);

  const handle = (req: Incoming, form: unknown): Answer => {
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(req.path);
    if (!m) return twilioError(404, 20404, 'The requested resource was not found');
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const [user, password] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':') : [];
    if (user !== accountSid || password !== authToken || m[1] !== accountSid) return twilioError(401, 20003, 'Authenticate');
    if (req.method !== 'POST') return twilioError(405, 20004, 'Method not allowed');
    if (!isObject(form)) return twilioError(400, 21602, 'Message body is required.');
    const to = str(form.To);
    const fromField = str(form.From);
    const service = str(form.MessagingServiceSid);
    const body = str(form.Body);
    if (!to) return twilioError(400, 21604, "A 'To' phone number is required.");
    if (!E164.test(to)) return twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`);
    if (!fromField && !service) return twilioError(400, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message.");
    if (fromField && fromField !== from) return twilioError(400, 21606, `The From phone number ${fromField} is not a valid, SMS-capable inbound phone number or short code for your account.`);
    if (service && service !== messagingServiceSid) return twilioError(400, 21701, `The Messaging Service Sid ${service} is invalid.`);
    const media = form.MediaUrl === undefined ? [] : Array.isArray(form.MediaUrl) ? form.MediaUrl : [form.MediaUrl];
    if (!body && media.length === 0) return twilioError(400, 21602, 'Message body is required.');
    if (media.length > MAX_MEDIA) return twilioError(400, 21623, `The number of media files exceeds the limit of ${MAX_MEDIA}.`);
    if (media.some((u) => typeof u !== 'string' || !/^https?:\/\/\S+$/.test(u))) return twilioError(400, 21620, 'Invalid media URL(s).');
    if (body.length > MAX_BODY_CHARS) return twilioError(400, 21617, 'The concatenated message body exceeds the 1600 character limit.');
    const sid = `SM${randomBytes(16).toString('hex')}`;
    const now = new Date().toUTCString().replace('GMT', '+0000');
    const callback = str(form.StatusCallback);
    if (/^https?:\/\//.test(callback)) {
      const base: Record<string, string> = { AccountSid: accountSid, MessageSid: sid, SmsSid: sid, To: to, From: fromField || from, ApiVersion: '2010-04-01' };
      if (service) base.MessagingServiceSid = service;
      callbacks.schedule(callback, base, to);
    }
    return {
      status: 201,
      body: {
        sid,
        account_sid: accountSid,
        api_version: '2010-04-01',
        to,
        from: fromField || null,
        messaging_service_sid: service || null,
        body,
        status: service && !fromField ? 'accepted' : 'queued',
        num_segments: String(Math.max(1, Math.ceil(body.length / 153))),
        direction: 'outbound-api',
        date_created: now,
        date_updated: now,
        date_sent: null,
        price: null,
        price_unit: 'USD',
        error_code: null,
        error_message: null,
        uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`,
      },
    };
  };

  const protocol: Protocol = {
    parse: (req) => formOf(req.raw.toString('utf8')),
    tokens: (_req, form) => (isObject(form) && typeof form.To === 'string' ? [form.To] : []),
    handle,
    control: callbacks.routes(),
    reset: () => callbacks.reset(),
    close: () => callbacks.close(),
  };

  return {
    protocol,
    bind: (url) => {
      baseUrl = url;
    },
    credentials: (kind = 'from') =>
      kind === 'from'
        ? { account_sid: accountSid, auth_token: authToken, from, base_url: baseUrl }
        : { account_sid: accountSid, auth_token: authToken, messaging_service_sid: messagingServiceSid, base_url: baseUrl },
  };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function twilioError(status: number, code: number, message: string): Answer {
  return { status, body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status } };
}

/** Most MediaUrl values of one message. */
const MAX_MEDIA = 10;

/** A form body as an object; a name given several times (MediaUrl) keeps every value, in order. */
function formOf(text: string): Record<string, string | string[]> {
  const form: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const prior = form[name];
    form[name] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value];
  }
  return form;
}
