import { connect } from 'node:net';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { testRedis } from '../helpers/redis.ts';

/** Tests of the gateway: reading what it wrote, and talking raw HTTP where fetch cannot. */

/** Every ingest entry of one user, in stream order (PARTITIONS is 8 in tests). */
export async function entriesOf(prefix: string, project: string, externalId: string): Promise<IngestEntry[]> {
  const topology = new Topology(prefix, 8);
  const redis = testRedis();
  try {
    const rows = await redis.xrange(topology.ingest(topology.partitionOf(project, externalId)), '-', '+');
    return rows.map(([, fields]) => JSON.parse(fields[1] ?? '{}') as IngestEntry).filter((e) => e.external_id === externalId);
  } finally {
    redis.disconnect();
  }
}

export interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/**
 * Sends raw bytes on a fresh connection and resolves with the first response (status line,
 * headers, Content-Length body). Rejects if the server closes without answering.
 */
export function rawRequest(port: number, bytes: Buffer | string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let answered = false;
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = text.slice(0, end);
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (data.length < end + 4 + length) return;
      answered = true;
      socket.destroy();
      resolve({ status: Number(head.split(' ')[1]), head, body: data.subarray(end + 4, end + 4 + length).toString('utf8') });
    });
    socket.on('error', (err) => {
      if (!answered) reject(err);
    });
    socket.on('close', () => {
      if (!answered) reject(new Error('connection closed without an answer'));
    });
  });
}
