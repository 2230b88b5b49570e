/**
 * What bench/memory.ts writes: users with tags and IOS_PUSH subscriptions, extra tags, events with
 * an idempotency_key (SDK batches), notifications to lists of ids (REST), and the APNs endpoint
 * that never answers, which holds a notification in flight.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer as createH2Server, type Http2Server, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { call } from './deployment.ts';

/** Operations per SDK batch (the API takes up to 1000), and batches in flight. */
export const BATCH = 500;
export const IN_FLIGHT = 8;
/** include_external_user_ids takes at most 20 000 ids. */
const IDS_PER_NOTIFICATION = 20_000;

export const userId = (i: number): string => `user${String(i).padStart(6, '0')}`;
export const recipientId = (i: number): string => `rcpt${String(i).padStart(6, '0')}`;
/** An APNs device token: 64 hex characters. */
export const iosToken = (seed: string): string => createHash('sha256').update(seed).digest('hex');
const PLANS = ['free', 'pro', 'team'];
const COUNTRIES = ['US', 'DE', 'FR', 'BR', 'IN', 'JP'];

export function firstTags(i: number): Record<string, string | number> {
  return { plan: PLANS[i % 3] ?? 'free', level: i % 50, country: COUNTRIES[i % 6] ?? 'US', language: 'en', signup_day: `2026-11-${String(1 + (i % 28)).padStart(2, '0')}` };
}

export function extraTags(i: number): Record<string, string | number> {
  return { cohort: `c${i % 12}`, score: i % 1000, last_screen: 'settings', app_theme: i % 2 === 0 ? 'dark' : 'light', referrer: `campaign-${i % 40}` };
}

export function subscribe(externalId: string, token: string): Record<string, string> {
  return { op: 'subscribe', external_id: externalId, type: 'IOS_PUSH', token, device_model: 'iPhone15,2', device_os: '17.4.1', app_version: '3.2.1' };
}

/** Sends `count` operations as SDK batches, IN_FLIGHT at once; every batch must be accepted. */
export async function sendOps(base: string, key: string, count: number, op: (i: number) => Record<string, unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let from = next; from < count; from = next) {
      next = Math.min(count, from + BATCH);
      const operations = Array.from({ length: next - from }, (_, k) => op(from + k));
      const answer = await call(`${base}/api/sdk/batch`, 'POST', key, { operations });
      if (answer.status !== 202) throw new Error(`POST /api/sdk/batch answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** Sends one notification per IDS_PER_NOTIFICATION of `ids`; resolves to their ids. */
export async function notify(base: string, restKey: string, ids: string[]): Promise<string[]> {
  const created: string[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_NOTIFICATION) {
    const answer = await call(`${base}/api/notifications`, 'POST', restKey, {
      include_external_user_ids: ids.slice(i, i + IDS_PER_NOTIFICATION),
      headings: { en: 'Your order shipped' },
      contents: { en: 'It arrives on Thursday; tap to follow it.' },
      data: { order: 'A-1234' },
    });
    if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    created.push((answer.body as { id: string }).id);
  }
  return created;
}

/**
 * An APNs endpoint that never answers: an HTTP/2 server (clear text, as an `http://` base_url
 * asks) that takes every stream and leaves it open.
 */
export async function silentApns(): Promise<{ url: string; stop: () => Promise<void> }> {
  const sessions = new Set<ServerHttp2Session>();
  const server: Http2Server = createH2Server();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream) => stream.on('error', () => undefined));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const stop = async (): Promise<void> => {
    for (const session of sessions) session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stop };
}

/** APNs credentials for the silent endpoint (a fresh key: it checks none), written into `dir`. */
export function apnsCredentials(dir: string, baseUrl: string): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(dir, 'apns-silent.json');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  writeFileSync(file, JSON.stringify({ team_id: 'TEAM123456', key_id: 'KEY1234567', private_key: pem, topic: 'com.example.app', environment: 'production', base_url: baseUrl }));
  return file;
}
