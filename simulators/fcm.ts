import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import type { FcmCredentials } from '../schemas/providers.ts';
import { isObject, parseJson, type Answer, type Incoming, type Protocol } from './server.ts';

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ACCESS_TOKEN_TTL_S = 3600;
const MAX_MESSAGE = 4096;
const FCM_ERROR = 'type.googleapis.com/google.firebase.fcm.v1.FcmError';

export interface FcmSim {
  protocol: Protocol;
  /** Tells the simulator its own URL, which token_uri (the JWT audience) derives from. */
  bind(baseUrl: string): void;
  credentials(): FcmCredentials;
}

/** FCM HTTP v1 plus the Google OAuth token endpoint its service account names as token_uri. */
export function fcmSimulator(reuse?: FcmCredentials): FcmSim {
  const account = reuse?.service_account;
  const privateKey = account ? createPrivateKey(account.private_key) : generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const publicKey = createPublicKey(privateKey);
  const projectId = account?.project_id ?? 'demo-project';
  const privateKeyId = account?.private_key_id ?? randomBytes(20).toString('hex');
  const clientEmail = account?.client_email ?? `engine@${projectId}.iam.gserviceaccount.com`;
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  /** access token → expiry (epoch ms). */
  let accessTokens = new Map<string, number>();
  let baseUrl = '';
  let tokenUri = '';

  const oauthError = (error: string, description: string): Answer => ({ status: 400, body: { error, error_description: description } });

  const issueToken = async (req: Incoming, form: unknown): Promise<Answer> => {
    if (req.method !== 'POST') return { status: 405, body: { error: 'method_not_allowed' } };
    if (!isObject(form) || form.grant_type !== GRANT_TYPE) return oauthError('unsupported_grant_type', 'Invalid grant_type: ' + String(isObject(form) ? form.grant_type : ''));
    const assertion = form.assertion;
    if (typeof assertion !== 'string' || assertion === '') return oauthError('invalid_request', 'Missing required parameter: assertion');
    try {
      const header = decodeProtectedHeader(assertion);
      if (header.alg !== 'RS256' || header.kid !== privateKeyId) return oauthError('invalid_grant', 'Invalid JWT Signature.');
    } catch {
      return oauthError('invalid_grant', 'Invalid JWT Signature.');
    }
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(assertion, publicKey, { algorithms: ['RS256'] }));
    } catch (err) {
      const expired = (err as { code?: string }).code === 'ERR_JWT_EXPIRED';
      return oauthError('invalid_grant', expired ? 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.' : 'Invalid JWT Signature.');
    }
    const { iss, aud, scope, iat, exp } = claims;
    if (iss !== clientEmail) return oauthError('invalid_grant', 'Invalid JWT: iss does not match a service account.');
    if (aud !== tokenUri) return oauthError('invalid_grant', 'Invalid JWT: Failed audience check.');
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > 3600 || exp <= iat || iat > Date.now() / 1000 + 60)
      return oauthError('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    if (typeof scope !== 'string' || !scope.split(' ').includes(SCOPE)) return oauthError('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const token = `ya29.sim-${randomBytes(24).toString('base64url')}`;
    accessTokens.set(token, Date.now() + ACCESS_TOKEN_TTL_S * 1000);
    return { status: 200, body: { access_token: token, expires_in: ACCESS_TOKEN_TTL_S, token_type: 'Bearer' } };
  };

  const send = (req: Incoming, body: unknown): Answer => {
    const auth = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const expiry = auth === undefined ? undefined : accessTokens.get(auth);
    // No FcmError detail here: the client must tell an auth failure from a token (device) failure.
    if (expiry === undefined || expiry < Date.now())
      return {
        status: 401,
        body: {
          error: {
            code: 401,
            message: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
            status: 'UNAUTHENTICATED',
          },
        },
      };
    const m = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.path);
    if (!m) return googleError(404, 'NOT_FOUND', `Method not found: ${req.path}`);
    if (req.method !== 'POST') return googleError(405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
    if (m[1] !== projectId) return googleError(403, 'PERMISSION_DENIED', `Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/${m[1]}'`, 'SENDER_ID_MISMATCH');
    const invalid = (message: string): Answer => googleError(400, 'INVALID_ARGUMENT', message, 'INVALID_ARGUMENT');
    if (!isObject(body)) return invalid('Invalid JSON payload received.');
    const msg = body.message;
    if (!isObject(msg)) return invalid('Request contains an invalid argument.');
    const targets = ['token', 'topic', 'condition'].filter((k) => msg[k] !== undefined);
    if (targets.length !== 1) return invalid('Exactly one of message.token, message.topic or message.condition must be set.');
    if (msg.token !== undefined && (typeof msg.token !== 'string' || msg.token === '')) return invalid('The registration token is not a valid FCM registration token');
    if (msg.data !== undefined) {
      if (!isObject(msg.data)) return invalid("Invalid value at 'message.data' (type.googleapis.com/google.protobuf.Struct)");
      const bad = Object.entries(msg.data).findIndex(([, v]) => typeof v !== 'string');
      if (bad >= 0) return invalid(`Invalid value at 'message.data[${bad}].value' (TYPE_STRING), ${JSON.stringify(Object.values(msg.data)[bad])}`);
    }
    if (msg.notification !== undefined && !isObject(msg.notification)) return invalid("Invalid value at 'message.notification'");
    if (msg.android !== undefined) {
      if (!isObject(msg.android)) return invalid("Invalid value at 'message.android'");
      const { priority, ttl } = msg.android;
      if (priority !== undefined && priority !== 'HIGH' && priority !== 'NORMAL') return invalid(`Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidConfig.AndroidMessagePriority), "${String(priority)}"`);
      if (ttl !== undefined && (typeof ttl !== 'string' || !/^\d+(\.\d{1,9})?s$/.test(ttl))) return invalid("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)");
      const shown = msg.android.notification;
      if (shown !== undefined) {
        if (!isObject(shown)) return invalid("Invalid value at 'message.android.notification'");
        const unknown = Object.keys(shown).find((k) => !ANDROID_NOTIFICATION_STRINGS.has(k));
        if (unknown !== undefined) return invalid(`Invalid JSON payload received. Unknown name "${unknown}" at 'message.android.notification': Cannot find field.`);
        const bad = Object.entries(shown).find(([, v]) => typeof v !== 'string');
        if (bad !== undefined) return invalid(`Invalid value at 'message.android.notification.${bad[0]}' (TYPE_STRING), ${JSON.stringify(bad[1])}`);
      }
    }
    if (req.raw.length > MAX_MESSAGE) return invalid('Message is too big');
    return { status: 200, body: { name: `projects/${projectId}/messages/0:${Date.now()}%${randomBytes(8).toString('hex')}` } };
  };

  const protocol: Protocol = {
    parse: (req) => (isTokenPath(req) ? Object.fromEntries(new URLSearchParams(req.raw.toString('utf8'))) : parseJson(req.raw)),
    tokens: (_req, body) => {
      const token = isObject(body) && isObject(body.message) ? body.message.token : undefined;
      return typeof token === 'string' ? [token] : [];
    },
    handle: (req, body) => (isTokenPath(req) ? issueToken(req, body) : send(req, body)),
    log: (req) => (isTokenPath(req) ? 'tokenRequests' : 'requests'),
    control: {
      'POST expire-tokens': () => {
        accessTokens = new Map();
        return { status: 204 };
      },
    },
  };

  return {
    protocol,
    bind: (url) => {
      baseUrl = url;
      tokenUri = `${url}/token`;
    },
    credentials: () => ({
      service_account: { project_id: projectId, client_email: clientEmail, private_key: pem, private_key_id: privateKeyId, token_uri: tokenUri },
      base_url: baseUrl,
    }),
  };
}

const isTokenPath = (req: Incoming): boolean => req.path.split('?')[0] === '/token';

function googleError(code: number, status: string, message: string, errorCode?: string): Answer {
  const error: Record<string, unknown> = { code, message, status };
  if (errorCode !== undefined) error.details = [{ '@type': FCM_ERROR, errorCode }];
  return { status: code, body: { error } };
}

/** The string fields of FCM's AndroidNotification (the others are left out: the engine sends none). */
const ANDROID_NOTIFICATION_STRINGS = new Set(['title', 'body', 'icon', 'color', 'sound', 'tag', 'click_action', 'body_loc_key', 'title_loc_key', 'channel_id', 'ticker', 'image']);
