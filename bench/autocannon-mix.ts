/**
 * The SDK write mix for autocannon, what bench/wrk-mix.lua is for wrk: started by
 * bench/mix-load.ts as a process of its own, so autocannon's CPU is read apart from the
 * benchmark's and the loop that sends is not the one that samples. It cycles the requests file
 * from a line on, over CONNECTIONS keep-alive connections, one request in flight on each, prints
 * `autocannon-mix: ready` once the file is read and `autocannon-mix: done {json}` at the end.
 *
 * `node --import tsx bench/autocannon-mix.ts URL SDK_KEY FILE FIRST CONNECTIONS SECONDS`
 */
import { readFile } from 'node:fs/promises';
import autocannon, { type RequestParams } from 'autocannon';

const [url = '', sdkKey = '', file = '', first = '0', connections = '100', seconds = '10'] = process.argv.slice(2);
const writes: RequestParams[] = [];
for (const line of (await readFile(file, 'utf8')).split('\n')) {
  const match = /^([A-Z]+)\t([^\t]+)\t(.*)$/.exec(line);
  if (match !== null) writes.push({ method: match[1] ?? 'POST', path: match[2] ?? '/', body: match[3] ?? '' });
}
if (writes.length === 0) throw new Error(`autocannon-mix: no requests in ${file}`);
let at = Number(first) % writes.length;
process.stdout.write('autocannon-mix: ready\n');

const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  pipelining: 1,
  timeout: 10,
  requests: [
    {
      headers: { authorization: `Bearer ${sdkKey}`, 'content-type': 'application/json' },
      setupRequest: (request) => {
        const write = writes[at];
        at = (at + 1) % writes.length;
        return { ...request, ...write };
      },
    },
  ],
});
const us = (ms: number): number => Math.round(ms * 1000);
const done = {
  duration_us: Math.round(result.duration * 1e6),
  requests: result.requests.total,
  non_2xx: result.non2xx,
  errors: result.errors - result.timeouts,
  timeouts: result.timeouts,
  p50_us: us(result.latency.p50),
  p99_us: us(result.latency.p99),
  max_us: us(result.latency.max),
};
process.stdout.write(`autocannon-mix: done ${JSON.stringify(done)}\n`);
