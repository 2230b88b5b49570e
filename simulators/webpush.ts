import { createECDH, createPublicKey, randomBytes, type ECDH } from 'node:crypto';
import ece from 'http_ece';
import { jwtVerify } from 'jose';
import webpush from 'web-push';
import type { WebPushCredentials } from '../schemas/providers.ts';
import type { WebPushSubscription } from './types.ts';
import { newId, type Answer, type Incoming, type Protocol } from './server.ts';

/** RFC 8292: a VAPID JWT may live at most 24 hours. */
const MAX_VAPID_TTL_S = 24 * 60 * 60;
/** What push services accept as an encrypted body (RFC 8030 section 7.2 asks for at least 4096). */
const MAX_BODY = 4096;
const URGENCIES = new Set(['very-low', 'low', 'normal', 'high']);

/** A subscription's keys; without `ecdh` a browser (a test) holds the private key and decrypts, not the simulator. */
interface Receiver {
  ecdh?: ECDH;
  auth: Buffer;
}

export interface WebPushSim {
  protocol: Protocol;
  bind(baseUrl: string): void;
  credentials(): WebPushCredentials;
  subscription(): WebPushSubscription;
  /** An endpoint for keys held elsewhere (a browser's): its pushes are taken and logged encrypted, `{ encrypted: <base64url> }`. */
  receiver(keys: { web_p256: string; web_auth: string }): WebPushSubscription;
}

/** A push service (RFC 8030) that plays the browser too: it holds each subscription's keys and decrypts. */
export function webPushSimulator(reuse?: WebPushCredentials): WebPushSim {
  const vapid = reuse ? { publicKey: reuse.vapid_public_key, privateKey: reuse.vapid_private_key } : webpush.generateVAPIDKeys();
  const subject = reuse?.subject ?? 'mailto:ops@example.com';
  const receivers = new Map<string, Receiver>();
  let baseUrl = '';

  const receiverOf = (req: Incoming): [string, Receiver | undefined] => {
    const id = /^\/push\/([^/?]+)$/.exec(req.path)?.[1] ?? '';
    return [id, receivers.get(id)];
  };

  const decrypt = (req: Incoming): string | { encrypted: string } | undefined => {
    const [, receiver] = receiverOf(req);
    if (!receiver || req.headers['content-encoding'] !== 'aes128gcm') return undefined;
    if (!receiver.ecdh) return { encrypted: req.raw.toString('base64url') };
    try {
      return ece.decrypt(req.raw, { version: 'aes128gcm', privateKey: receiver.ecdh, authSecret: receiver.auth }).toString('utf8');
    } catch {
      return undefined;
    }
  };

  const subscription = (): WebPushSubscription => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = randomBytes(16);
    const id = randomBytes(16).toString('base64url');
    receivers.set(id, { ecdh, auth });
    return { token: `${baseUrl}/push/${id}`, web_auth: auth.toString('base64url'), web_p256: ecdh.getPublicKey().toString('base64url') };
  };

  const receiver = (keys: { web_p256: string; web_auth: string }): WebPushSubscription => {
    const id = randomBytes(16).toString('base64url');
    receivers.set(id, { auth: Buffer.from(keys.web_auth, 'base64url') });
    return { token: `${baseUrl}/push/${id}`, ...keys };
  };

  const checkVapid = async (req: Incoming): Promise<Answer | null> => {
    const auth = req.headers.authorization;
    const m = auth === undefined ? null : /^vapid\s+(.*)$/i.exec(auth);
    if (!m?.[1]) return text(401, 'Authorization header must be "vapid t=<jwt>, k=<key>" (RFC 8292)');
    const params = new Map(
      m[1].split(',').map((p) => {
        const i = p.indexOf('=');
        return [p.slice(0, i).trim(), p.slice(i + 1).trim()] as const;
      }),
    );
    const t = params.get('t');
    const k = params.get('k');
    if (!t || !k) return text(401, 'vapid authorization needs t and k');
    const raw = Buffer.from(k, 'base64url');
    if (raw.length !== 65 || raw[0] !== 4) return text(401, 'k is not an uncompressed P-256 public key');
    const key = createPublicKey({
      format: 'jwk',
      key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') },
    });
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(t, key, { algorithms: ['ES256'] }));
    } catch (err) {
      return text(401, `vapid JWT rejected: ${(err as Error).message}`);
    }
    const origins = new Set([new URL(baseUrl).origin, `https://${req.headers.host ?? ''}`]);
    if (typeof claims.aud !== 'string' || !origins.has(claims.aud)) return text(401, `vapid aud must be the push service origin ${new URL(baseUrl).origin}`);
    if (typeof claims.exp !== 'number' || claims.exp > Date.now() / 1000 + MAX_VAPID_TTL_S) return text(401, 'vapid exp must be within 24 hours');
    if (typeof claims.sub !== 'string' || !/^(mailto:|https:)/.test(claims.sub)) return text(401, 'vapid sub must be a mailto: or https: URL');
    return null;
  };

  const protocol: Protocol = {
    parse: decrypt,
    tokens: (req) => {
      const [id] = receiverOf(req);
      return id ? [id] : [];
    },
    handle: async (req, plaintext) => {
      const [id, receiver] = receiverOf(req);
      if (!id) return text(404, 'no such endpoint');
      if (req.method !== 'POST') return text(405, 'only POST delivers a push message');
      if (!receiver) return text(410, 'push subscription has unsubscribed or expired');
      const ttl = req.headers.ttl;
      if (ttl === undefined || !/^\d+$/.test(ttl)) return text(400, 'TTL header is required (RFC 8030 section 5.2)');
      const urgency = req.headers.urgency;
      if (urgency !== undefined && !URGENCIES.has(urgency)) return text(400, 'Urgency must be very-low, low, normal or high');
      const topic = req.headers.topic;
      if (topic !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(topic)) return text(400, 'Topic must be at most 32 base64url characters');
      const denied = await checkVapid(req);
      if (denied) return denied;
      if (req.raw.length > MAX_BODY) return text(413, 'payload too large');
      if (req.raw.length > 0) {
        if (req.headers['content-encoding'] !== 'aes128gcm') return text(400, 'Content-Encoding must be aes128gcm (RFC 8291)');
        if (plaintext === undefined) return text(400, 'payload does not decrypt with the subscription keys');
      }
      return { status: 201, headers: { location: `${baseUrl}/message/${newId()}`, ttl } };
    },
    control: {
      'POST subscriptions': () => ({ status: 201, body: subscription() }),
      'POST receivers': (body) => {
        const keys = body as { web_p256?: unknown; web_auth?: unknown } | null;
        if (typeof keys?.web_p256 !== 'string' || typeof keys.web_auth !== 'string') return { status: 400, body: { error: 'web_p256 and web_auth (base64url) are required' } };
        return { status: 201, body: receiver({ web_p256: keys.web_p256, web_auth: keys.web_auth }) };
      },
    },
  };

  return {
    protocol,
    bind: (url) => {
      baseUrl = url;
    },
    credentials: () => ({ vapid_public_key: vapid.publicKey, vapid_private_key: vapid.privateKey, subject }),
    subscription,
    receiver,
  };
}

const text = (status: number, message: string): Answer => ({ status, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: message });
