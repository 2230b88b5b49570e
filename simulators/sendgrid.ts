import { randomBytes } from 'node:crypto';
import type { SendGridCredentials } from '../schemas/providers.ts';
import { isObject, parseJson, type Answer, type Incoming, type Protocol } from './server.ts';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** SendGrid's limit on the whole request. */
const MAX_REQUEST = 30 * 1024 * 1024;
const HELP = 'http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html';

interface FieldError {
  message: string;
  field: string | null;
  help: string | null;
}

export interface SendGridSim {
  protocol: Protocol;
  bind(baseUrl: string): void;
  credentials(): SendGridCredentials;
}

/** SendGrid v3 Mail Send. */
export function sendGridSimulator(reuse?: SendGridCredentials): SendGridSim {
  const apiKey = reuse?.api_key ?? `SG.${randomBytes(16).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
  const from = reuse?.from ?? 'noreply@example.com';
  let baseUrl = '';

  const handle = (req: Incoming, body: unknown): Answer => {
    if (req.path !== '/v3/mail/send') return errorsOf(404, [{ message: 'resource not found', field: null, help: null }]);
    const auth = req.headers.authorization;
    if (auth === undefined) return errorsOf(401, [{ message: 'authorization required', field: null, help: null }]);
    if (auth !== `Bearer ${apiKey}`) return errorsOf(401, [{ message: 'The provided authorization grant is invalid, expired, or revoked', field: null, help: null }]);
    if (req.method !== 'POST') return errorsOf(405, [{ message: 'method not allowed', field: null, help: null }]);
    if (req.raw.length > MAX_REQUEST) return errorsOf(413, [{ message: 'Payload Too Large', field: null, help: null }]);
    if (!isObject(body)) return errorsOf(400, [{ message: 'Bad Request', field: null, help: null }]);
    const problems = validate(body);
    if (problems.length > 0) return errorsOf(400, problems);
    if (isObject(body.from) && body.from.email !== from)
      return errorsOf(403, [
        {
          message: 'The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved.',
          field: 'from',
          help: 'https://sendgrid.com/docs/for-developers/sending-email/sender-identity/',
        },
      ]);
    return { status: 202, headers: { 'x-message-id': randomBytes(16).toString('base64url').slice(0, 22) } };
  };

  const protocol: Protocol = {
    parse: (req) => parseJson(req.raw),
    tokens: (_req, body) => recipients(body),
    handle,
  };

  return {
    protocol,
    bind: (url) => {
      baseUrl = url;
    },
    credentials: () => ({ api_key: apiKey, from, base_url: baseUrl }),
  };
}

function validate(body: Record<string, unknown>): FieldError[] {
  const problems: FieldError[] = [];
  const add = (field: string, message: string, anchor: string): void => {
    problems.push({ message, field, help: `${HELP}#message.${anchor}` });
  };
  const { personalizations, subject, content, template_id: templateId } = body;
  if (!Array.isArray(personalizations) || personalizations.length === 0 || personalizations.length > 1000) {
    add('personalizations', 'The personalizations field is required and must have at least one personalization.', 'personalizations');
  } else {
    personalizations.forEach((p: unknown, i) => {
      if (!isObject(p) || !Array.isArray(p.to) || p.to.length === 0) {
        add(`personalizations.${i}.to`, 'The to array is required for all personalization objects, and must have at least one email object with a valid email address.', 'personalizations.to');
        return;
      }
      p.to.forEach((to: unknown, j) => {
        if (!isObject(to) || typeof to.email !== 'string' || !EMAIL.test(to.email)) add(`personalizations.${i}.to.${j}.email`, 'Does not contain a valid address.', 'personalizations.to');
      });
    });
  }
  if (!isObject(body.from) || typeof body.from.email !== 'string' || !EMAIL.test(body.from.email))
    add('from.email', 'The from object must be provided for every email send. It is an object that requires the email parameter, but may also contain a name parameter.', 'from');
  const everyHasSubject = Array.isArray(personalizations) && personalizations.every((p: unknown) => isObject(p) && typeof p.subject === 'string' && p.subject !== '');
  if ((typeof subject !== 'string' || subject === '') && templateId === undefined && !everyHasSubject)
    add('subject', 'The subject is required. You can get around this requirement if you use a template with a subject defined or if every personalization has a subject defined.', 'subject');
  if (templateId === undefined) {
    if (!Array.isArray(content) || content.length === 0) {
      add('content', 'Unless a valid template_id is provided, the content parameter is required. There must be at least one defined content block. We typically suggest both text/plain and text/html blocks are included, but only one block is required.', 'content');
    } else {
      content.forEach((c: unknown, i) => {
        if (!isObject(c) || typeof c.type !== 'string' || c.type === '') add(`content.${i}.type`, 'The content type cannot contain ";", or CRLF characters, and must be at least one character long.', 'content.type');
        else if (c.type !== 'text/plain' && content.slice(i + 1).some((d: unknown) => isObject(d) && d.type === 'text/plain'))
          add(`content.${i}.type`, 'If present, text/plain content must be first, followed by text/html, followed by any other content.', 'content.type');
        if (!isObject(c) || typeof c.value !== 'string' || c.value === '') add(`content.${i}.value`, 'The content value must be a string at least one character in length.', 'content.value');
      });
    }
  }
  return problems;
}

function recipients(body: unknown): string[] {
  if (!isObject(body) || !Array.isArray(body.personalizations)) return [];
  const out: string[] = [];
  for (const p of body.personalizations as unknown[]) {
    if (!isObject(p)) continue;
    for (const list of [p.to, p.cc, p.bcc]) {
      if (!Array.isArray(list)) continue;
      for (const r of list as unknown[]) if (isObject(r) && typeof r.email === 'string') out.push(r.email);
    }
  }
  return out;
}

const errorsOf = (status: number, errors: FieldError[]): Answer => ({ status, body: { errors } });
