import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { entriesOf } from './support.ts';

/**
 * The limits uWebSockets.js puts on a client (README "Limits"): a request must
 * be whole (headers and body) within its HTTP idle timeout of 10 s, checked on 4 s ticks, unless
 * its body streams at 16 KiB/s or more; a request of more than 48 header lines is never answered.
 * Either way the server closes the connection without a byte, and serves the others meanwhile.
 */

interface Seen {
  /** What the server sent. */
  data: string;
  /** When the server closed the connection, ms after connecting; null if it did not within the cap. */
  closedAfterMs: number | null;
}

/** Sends `parts` on a fresh connection, `gapMs` apart; resolves when the server closes or after `capMs`. */
function exchange(port: number, parts: string[], gapMs: number, capMs: number): Promise<Seen> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean): void => {
      clearTimeout(timer);
      clearTimeout(cap);
      socket.destroy();
      resolve({ data, closedAfterMs: closed ? Date.now() - started : null });
    };
    const cap = setTimeout(() => finish(false), capMs);
    const next = (): void => {
      if (sent >= parts.length || socket.destroyed) return;
      socket.write(parts[sent++] ?? '');
      timer = setTimeout(next, gapMs);
    };
    socket.on('connect', next);
    socket.on('data', (d: Buffer) => (data += d.toString('latin1')));
    socket.on('close', () => finish(true));
    socket.on('error', () => undefined);
  });
}

/** A GET /healthz with `lines` header lines in all (Host among them). */
function withHeaders(lines: number): string {
  const extra = Array.from({ length: lines - 1 }, (_, i) => `X-Filler-${i}: v\r\n`).join('');
  return `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;
}

const statusOf = (seen: Seen): string => seen.data.split('\r\n')[0] ?? '';

t.test('too many headers, or a body slower than the idle timeout: closed unanswered, others served', async (t) => {
  const d = await deployment(t);
  const gw = await d.start(['gateway']);
  const event = (externalId: string): string[] => {
    const body = JSON.stringify({ external_id: externalId, name: 'drip' });
    const head =
      `POST /api/sdk/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${d.project.sdk_key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    return [head, ...body.split('')];
  };
  const drip = event('slow-1');
  // All at once: each waits out the same idle timeout.
  const pending = {
    h48: exchange(gw.port, [withHeaders(48)], 0, 3000),
    h49: exchange(gw.port, [withHeaders(49)], 0, 20_000),
    h100: exchange(gw.port, [withHeaders(100)], 0, 20_000),
    drip: exchange(gw.port, drip, 1000, 25_000),
    brisk: exchange(gw.port, event('brisk-1'), 5000 / drip.length, 8000),
  };
  // While those wait, other clients are answered at once.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = Date.now();
  const other = await fetch(`${gw.url}/healthz`);
  t.equal(other.status, 200, 'another client is served meanwhile');
  t.ok(Date.now() - before < 2000, 'at once');

  const seen = {
    h48: await pending.h48,
    h49: await pending.h49,
    h100: await pending.h100,
    drip: await pending.drip,
    brisk: await pending.brisk,
  };
  t.equal(statusOf(seen.h48), 'HTTP/1.1 200 OK', '48 header lines are answered');
  for (const [what, s] of [
    ['49 header lines', seen.h49],
    ['100 header lines', seen.h100],
    [`a ${drip.length - 1}-byte body at one byte a second`, seen.drip],
  ] as const) {
    t.equal(s.data, '', `${what}: no answer at all`);
    t.ok(s.closedAfterMs !== null && s.closedAfterMs >= 7000 && s.closedAfterMs <= 18_000, `${what}: closed after the idle timeout (${s.closedAfterMs} ms)`);
  }
  t.same(await entriesOf(d.prefix, d.project.project_id, 'slow-1'), [], 'the cut-off event was not appended');
  t.equal(statusOf(seen.brisk), 'HTTP/1.1 202 Accepted', 'such a body dripped over 5 s is accepted');
  t.equal((await entriesOf(d.prefix, d.project.project_id, 'brisk-1')).length, 1, 'and appended');
  t.equal((await fetch(`${gw.url}/healthz`)).status, 200, 'the gateway still serves');
});

t.test('the README states these limits', async (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Limits')).replace(/\s+/g, ' ');
  t.match(section, /49 or more header lines/);
  t.match(section, /idle timeout of 10 s/);
  t.match(section, /16 KiB\/s/);
  t.match(section, /without sending a byte/);
});
