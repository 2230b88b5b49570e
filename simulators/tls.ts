import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SimCert {
  dir: string;
  /** PEM of the self-signed certificate: the CA file clients trust. */
  caFile: string;
  cert: string;
  key: string;
  remove(): Promise<void>;
}

/**
 * One self-signed P-256 certificate for 127.0.0.1 and localhost (plus `host` when it is another
 * name), made with the openssl CLI so no crypto is written here.
 */
export async function makeCert(host?: string): Promise<SimCert> {
  const dir = await mkdtemp(join(tmpdir(), 'provider-sims-'));
  const names = new Set(['IP:127.0.0.1', 'IP:::1', 'DNS:localhost']);
  if (host !== undefined && host !== '0.0.0.0' && host !== '::') names.add(isIP(host) ? `IP:${host}` : `DNS:${host}`);
  const caFile = join(dir, 'ca.pem');
  const keyFile = join(dir, 'key.pem');
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', caFile, '-days', '30', '-subj', '/CN=provider-simulators',
    '-addext', `subjectAltName=${[...names].join(',')}`,
  ]);
  const [cert, key] = await Promise.all([readFile(caFile, 'utf8'), readFile(keyFile, 'utf8')]);
  return { dir, caFile, cert, key, remove: () => rm(dir, { recursive: true, force: true }) };
}
