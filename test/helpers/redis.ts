import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { REDIS_URL } from '../../bench/redis.ts';

export { cleanupPrefix, REDIS_URL } from '../../bench/redis.ts';

/** A key prefix no other test uses. */
export function testPrefix(): string {
  return `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}:`;
}

/** A plain client for assertions; the caller quits it. */
export function testRedis(): Redis {
  return new Redis(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 2 });
}

/**
 * Every command the test Redis runs from now on, one MONITOR line each (`+<time> [<db> <client>]
 * "<command>" "<arg>"…`), handed to `onLine`. A socket of its own, not an ioredis client: a
 * client closed while MONITOR lines still arrive takes the next one for the reply of a command
 * it never sent, and throws.
 */
export async function monitorLines(onLine: (line: string) => void): Promise<{ close(): void }> {
  const url = new URL(REDIS_URL);
  const socket = connect(Number(url.port || 6379), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => {
    // Closed by close(), or the server went away: the test sees the lines stop.
  });
  const auth = url.password === '' ? '' : `AUTH ${url.username === '' ? '' : `${decodeURIComponent(url.username)} `}${decodeURIComponent(url.password)}\r\n`;
  socket.write(`${auth}MONITOR\r\n`);
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\r\n');
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  return { close: () => socket.destroy() };
}
