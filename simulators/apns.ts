import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { ServerHttp2Session } from 'node:http2';
import { decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { ApnsCredentials } from '../schemas/providers.ts';
import { newId, parseJson, isObject, type Answer, type Incoming, type Protocol } from './server.ts';

/** APNs keeps one token per key for at least this long (docs/providers.md#apns: 429 TooManyProviderTokenUpdates). */
const TOKEN_MIN_AGE_S = 20 * 60;
/** Provider tokens older than this are refused (403 ExpiredProviderToken). */
const TOKEN_MAX_AGE_S = 60 * 60;
const MAX_PAYLOAD = 4096;
const MAX_PAYLOAD_VOIP = 5120;
/** SETTINGS_MAX_CONCURRENT_STREAMS after the first accepted push on a connection. */
export const APNS_RAISED_STREAMS = 1000;

const PUSH_TYPES = new Set(['alert', 'background', 'voip', 'complication', 'fileprovider', 'mdm', 'liveactivity', 'location', 'pushtotalk', 'widgets', 'controls']);
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const DEVICE_TOKEN = /^[0-9a-fA-F]{64,200}$/;

export interface ApnsSim {
  protocol: Protocol;
  bind(baseUrl: string): void;
  credentials(): ApnsCredentials;
}

/** Apple Push Notification service, token-based auth, as docs/providers.md#apns describes it. */
export function apnsSimulator(reuse?: ApnsCredentials): ApnsSim {
  const privateKey = reuse ? createPrivateKey(reuse.private_key) : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const publicKey = createPublicKey(privateKey);
  const teamId = reuse?.team_id ?? randomBytes(5).toString('hex').toUpperCase();
  const keyId = reuse?.key_id ?? randomBytes(5).toString('hex').toUpperCase();
  const topic = reuse?.topic ?? 'com.example.app';
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  /** iat of the token in force for the key, to spot regeneration storms. */
  let currentIat: number | null = null;
  let baseUrl = '';
  const raised = new WeakSet<ServerHttp2Session>();

  const fail = (status: number, reason: string, timestamp?: number): Answer => ({
    status,
    body: timestamp === undefined ? { reason } : { reason, timestamp },
  });

  const checkToken = async (req: Incoming): Promise<Answer | null> => {
    const auth = req.headers.authorization;
    if (auth === undefined || auth === '') return fail(403, 'MissingProviderToken');
    const m = /^bearer\s+(\S+)$/i.exec(auth);
    if (!m?.[1]) return fail(403, 'InvalidProviderToken');
    const jwt = m[1];
    try {
      const header = decodeProtectedHeader(jwt);
      if (header.alg !== 'ES256' || header.kid !== keyId) return fail(403, 'InvalidProviderToken');
    } catch {
      return fail(403, 'InvalidProviderToken');
    }
    let iat: number;
    try {
      const { payload } = await jwtVerify(jwt, publicKey, { algorithms: ['ES256'], issuer: teamId });
      if (typeof payload.iat !== 'number') return fail(403, 'InvalidProviderToken');
      iat = payload.iat;
    } catch (err) {
      return fail(403, err instanceof errors.JWTExpired ? 'ExpiredProviderToken' : 'InvalidProviderToken');
    }
    const now = Math.floor(Date.now() / 1000);
    if (now - iat > TOKEN_MAX_AGE_S) return fail(403, 'ExpiredProviderToken');
    if (iat > now + 60) return fail(403, 'InvalidProviderToken');
    // Distinct tokens are told apart by iat: ES256 signatures differ each time for the same claims.
    if (currentIat === null || now - currentIat > TOKEN_MAX_AGE_S) currentIat = iat;
    else if (iat > currentIat) {
      if (iat - currentIat < TOKEN_MIN_AGE_S) return fail(429, 'TooManyProviderTokenUpdates');
      currentIat = iat;
    }
    return null;
  };

  const validate = (req: Incoming): Answer | null => {
    const h = req.headers;
    if (req.method !== 'POST') return fail(405, 'MethodNotAllowed');
    const m = /^\/3\/device\/([^/?]*)$/.exec(req.path);
    if (!m) return fail(404, 'BadPath');
    if (!m[1]) return fail(400, 'MissingDeviceToken');
    if (!DEVICE_TOKEN.test(m[1])) return fail(400, 'BadDeviceToken');
    if (h['apns-topic'] === undefined) return fail(400, 'MissingTopic');
    const pushType = h['apns-push-type'] ?? 'alert';
    if (!PUSH_TYPES.has(pushType)) return fail(400, 'InvalidPushType');
    const expected = pushType === 'voip' ? `${topic}.voip` : pushType === 'liveactivity' ? `${topic}.push-type.liveactivity` : topic;
    if (h['apns-topic'] !== expected && h['apns-topic'] !== topic) return fail(400, 'TopicDisallowed');
    if (h['apns-id'] !== undefined && !UUID.test(h['apns-id'])) return fail(400, 'BadMessageId');
    if (h['apns-priority'] !== undefined && !['10', '5', '1'].includes(h['apns-priority'])) return fail(400, 'BadPriority');
    if (pushType === 'background' && h['apns-priority'] === '10') return fail(400, 'BadPriority');
    if (h['apns-expiration'] !== undefined && !/^\d+$/.test(h['apns-expiration'])) return fail(400, 'BadExpirationDate');
    if (h['apns-collapse-id'] !== undefined && Buffer.byteLength(h['apns-collapse-id']) > 64) return fail(400, 'BadCollapseId');
    if (req.raw.length === 0) return fail(400, 'PayloadEmpty');
    if (req.raw.length > (pushType === 'voip' ? MAX_PAYLOAD_VOIP : MAX_PAYLOAD)) return fail(413, 'PayloadTooLarge');
    const body = parseJson(req.raw);
    // Apple has no documented reason for malformed JSON; this one is the simulator's own.
    if (!isObject(body) || !isObject(body.aps)) return fail(400, 'BadPayload');
    return null;
  };

  const protocol: Protocol = {
    parse: (req) => parseJson(req.raw),
    tokens: (req) => {
      const m = /^\/3\/device\/([^/?]+)/.exec(req.path);
      return m?.[1] ? [m[1]] : [];
    },
    handle: async (req) => {
      const invalid = (await checkToken(req)) ?? validate(req);
      if (invalid) return invalid;
      // Apple raises the stream limit once a connection has delivered a push with a valid token.
      if (req.session && !raised.has(req.session)) {
        raised.add(req.session);
        req.session.settings({ maxConcurrentStreams: APNS_RAISED_STREAMS });
      }
      return { status: 200 };
    },
    decorate: (req, answer) => {
      answer.headers = { 'apns-id': req.headers['apns-id'] ?? newId(), ...answer.headers };
    },
    reset: () => {
      currentIat = null;
    },
  };

  return {
    protocol,
    bind: (url) => {
      baseUrl = url;
    },
    credentials: () => ({ team_id: teamId, key_id: keyId, private_key: pem, topic, environment: 'sandbox', base_url: baseUrl }),
  };
}
