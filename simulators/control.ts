import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';

export interface ControlTarget {
  url: string;
  /** The simulator speaks HTTP/2 only (APNs). */
  h2: boolean;
  ca: string;
}

/** Calls a simulator's control surface (`/__sim/...`) over its own transport; answers parsed JSON. */
export async function control(target: ControlTarget, method: string, path: string, body?: unknown): Promise<unknown> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {};
  const { status, text } = target.h2 ? await viaH2(target, method, path, headers, payload) : await viaH1(target, method, path, headers, payload);
  if (status >= 400) throw new Error(`${method} ${path} on ${target.url}: ${status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

interface Reply {
  status: number;
  text: string;
}

function viaH2(target: ControlTarget, method: string, path: string, headers: Record<string, string>, payload?: Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(target.url, { ca: target.ca });
    session.on('error', reject);
    const req = session.request({ ':method': method, ':path': path, ...headers });
    let status = 0;
    const chunks: Buffer[] = [];
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      session.close();
      resolve({ status, text: Buffer.concat(chunks).toString('utf8') });
    });
    req.on('error', (err) => {
      session.destroy();
      reject(err);
    });
    req.end(payload);
  });
}

function viaH1(target: ControlTarget, method: string, path: string, headers: Record<string, string>, payload?: Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, target.url);
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, { method, headers, ca: target.ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
