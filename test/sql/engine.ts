import { createServer } from 'node:net';
import type { Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import type { OutcomeEntry } from '../../schemas/outcomes.ts';
import { deployment, type EngineProcess, type TestDeployment } from '../helpers/engine.ts';
import { outcome } from '../recorder/outcomes.ts';

export interface SqlEngine {
  d: TestDeployment;
  engine: EngineProcess;
  /** The SQL listener's base URL. */
  sqlUrl: string;
  /** The deployment's environment with the listener's SQL_PORT. */
  env: Record<string, string>;
  operatorKey: string;
  /** Appends outcomes to the streams the recorder reads, as dispatch does. */
  addOutcomes(entries: OutcomeEntry[]): Promise<void>;
  /** `outcome()` of test/recorder for this deployment's project. */
  outcome(n: number, over?: Partial<OutcomeEntry>): OutcomeEntry;
}

/** A port free right now (the listener takes it a moment later; SQL_PORT=0 turns it off). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

/** An engine running the gateway, apply, recorder and sql roles, with an operator key. */
export async function sqlEngine(t: Test, env: Record<string, string> = {}): Promise<SqlEngine> {
  const d = await deployment(t);
  const port = await freePort();
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const operatorKey = await new Keystore(redis, topology).createOperatorKey();
  const own = { ...d.env, SQL_PORT: String(port), ...env };
  const engine = await d.start(['gateway', 'apply', 'recorder', 'sql'], own);
  const project = d.project.project_id;
  return {
    d,
    engine,
    sqlUrl: `http://127.0.0.1:${port}`,
    env: own,
    operatorKey,
    outcome: (n, over = {}) => outcome(project, n, over),
    addOutcomes: async (entries) => {
      for (const o of entries) await redis.xadd(topology.outcomes(topology.partitionOf(o.project, o.external_id)), '*', 'd', JSON.stringify(o));
    },
  };
}

/** A GET or POST to the SQL listener, with the operator key as `X-ClickHouse-Key` unless `headers` say otherwise. */
export async function sqlCall(
  url: string,
  query: Record<string, string>,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const target = new URL('/', url);
  for (const [name, value] of Object.entries(query)) target.searchParams.set(name, value);
  const res = await fetch(target, { method: opts.body === undefined ? 'GET' : 'POST', headers: opts.headers ?? {}, ...(opts.body === undefined ? {} : { body: opts.body }) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}
