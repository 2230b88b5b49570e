/**
 * `npm run simulators [-- --out DIR] [--host H] [--apns-port N] [--fcm-port N] [--webpush-port N]
 * [--twilio-port N] [--sendgrid-port N]`: starts the five provider simulators standalone (demo
 * mode: every well-formed, authenticated request succeeds) and writes into DIR (default
 * ./.data/simulators) one credential file per provider for `engine providers set <project>
 * <provider> --file DIR/<provider>.json`, the CA as DIR/ca.pem (PROVIDER_CA_FILE), one web push
 * subscription the simulator can decrypt, and simulators.json with the URLs. Runs until SIGINT or
 * SIGTERM. A restart keeps the identities (keys, secrets) and ports of the files already in DIR,
 * so what was registered with the engine stays valid; `--fresh` makes new ones.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkCredentials } from '../engine/state/keys/provider-store.ts';
import { startSimulators, type SimName, type Simulators, type StartOptions } from './index.ts';

const names: SimName[] = ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'];
const { values } = parseArgs({
  options: {
    out: { type: 'string', default: './.data/simulators' },
    host: { type: 'string', default: '127.0.0.1' },
    fresh: { type: 'boolean', default: false },
    ...Object.fromEntries(names.map((n) => [`${n}-port`, { type: 'string' as const }])),
  },
});

const ports: Partial<Record<SimName, number>> = {};
for (const name of names) {
  const raw = (values as Record<string, unknown>)[`${name}-port`];
  if (typeof raw !== 'string') continue;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--${name}-port must be a port number, got ${raw}`);
    process.exit(2);
  }
  ports[name] = port;
}

const out = resolve(String(values.out));
const reuse: NonNullable<StartOptions['reuse']> = {};
const previousPorts: Partial<Record<SimName, number>> = {};
if (!values.fresh) {
  for (const name of names) {
    const file = await readFile(join(out, `${name}.json`), 'utf8').catch(() => null);
    if (file === null) continue;
    try {
      // Only files the engine would accept are kept; anything else is replaced.
      Object.assign(reuse, { [name]: checkCredentials(name, JSON.parse(file)) });
    } catch {
      console.warn(`ignoring ${join(out, `${name}.json`)}: not a valid ${name} credential file`);
    }
  }
  const previous = await readFile(join(out, 'simulators.json'), 'utf8').catch(() => null);
  if (previous !== null) {
    for (const [name, url] of Object.entries((JSON.parse(previous) as { urls?: Record<string, string> }).urls ?? {}))
      if (names.includes(name as SimName)) previousPorts[name as SimName] = Number(new URL(url).port);
  }
}

let sims: Simulators;
try {
  sims = await startSimulators({ host: String(values.host), ports: { ...previousPorts, ...ports }, reuse });
} catch (err) {
  if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Object.keys(previousPorts).length === 0) throw err;
  console.warn('the ports of the previous run are taken: new ports, so register the credential files again');
  sims = await startSimulators({ host: String(values.host), ports, reuse });
}
await mkdir(out, { recursive: true });
// The certificate lives in a temp dir removed on close; the copy in DIR is what the engine reads.
const caFile = join(out, 'ca.pem');
await copyFile(sims.caFile, caFile);
const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;
await Promise.all([
  writeFile(join(out, 'apns.json'), json(sims.apns.credentials()), { mode: 0o600 }),
  writeFile(join(out, 'fcm.json'), json(sims.fcm.credentials()), { mode: 0o600 }),
  writeFile(join(out, 'webpush.json'), json(sims.webpush.credentials()), { mode: 0o600 }),
  writeFile(join(out, 'twilio.json'), json(sims.twilio.credentials()), { mode: 0o600 }),
  writeFile(join(out, 'sendgrid.json'), json(sims.sendgrid.credentials()), { mode: 0o600 }),
  writeFile(join(out, 'webpush-subscription.json'), json({ type: 'WEB_PUSH', ...sims.webpush.subscription() })),
]);
const urls = Object.fromEntries(names.map((n) => [n, sims[n].url]));
await writeFile(join(out, 'simulators.json'), json({ caFile, urls, pid: process.pid }));

console.log('provider simulators running (demo mode: everything accepted)');
for (const name of names) console.log(`  ${name.padEnd(9)} ${sims[name].url}   credentials: ${join(out, `${name}.json`)}`);
console.log(`  caFile    ${caFile}   (PROVIDER_CA_FILE)`);
console.log(`  control   POST <url>/__sim/script {match, respond, times} | GET <url>/__sim/requests | POST <url>/__sim/reset`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  sims.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
