/**
 * The usual alternative, built the way a Node team typically would: the reference point of the
 * SDK benchmarks (bench/sdk-ingest.ts, bench/apply-lag.ts, bench/soak.ts), not product code.
 *
 * Fastify over HTTP/1.1 validates each SDK write with the engine's own TypeBox schemas
 * (schemas/sdk.ts, as Fastify route schemas), enqueues it with BullMQ `Queue.add` on the same
 * Redis (under KEY_PREFIX) and answers 202 `{"accepted":true}` once the add resolved; a separate
 * process (bench/baselines/worker.ts, a BullMQ Worker) applies the jobs to per-user hashes, which
 * `GET /api/users/:id` reads back in a compatible subset of the engine's answer (tags, subscriptions).
 * Same paths, bodies and `Authorization: Bearer <key>` header as the engine; one fixed key.
 *
 * Run: `node --import tsx bench/baselines/server.ts` with PORT (0: any), REDIS_URL, KEY_PREFIX,
 * BASELINE_KEY. Prints `{"msg":"listening","port":N}` once it listens on 127.0.0.1; stops on
 * SIGTERM or SIGINT.
 */
import { Queue } from 'bullmq';
import Fastify, { type FastifyError, type FastifyReply } from 'fastify';
import { Redis } from 'ioredis';
import { Accepted, BatchAccepted, BatchRequest, EventBody, IdentifyBody, SubscriptionBody, TagsBody, type SdkOp } from '../../schemas/sdk.ts';
import { isTimeZone } from '../../engine/infra/process/local-time.ts';
import { logLine, readEnv } from './env.ts';
import { QUEUE, readUser, type WriteJob } from './state.ts';

const env = readEnv();
if (env.key === '') throw new Error('BASELINE_KEY must be set');

const connection = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
const queue = new Queue<WriteJob>(QUEUE, {
  connection,
  prefix: `${env.keyPrefix}bull`,
  // Completed jobs are dropped so the queue stays bounded, as a team running it for real would.
  defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000 },
});
const reads = new Redis(env.redisUrl, { maxRetriesPerRequest: 2 });

// The engine refuses what its schemas refuse: no coercion, no silent removal of unknown fields.
// Answers are declared too, so Fastify serialises them with fast-json-stringify, as it is meant to be used.
// The SDK schemas name the engine's `timezone` format (tags.timezone); Fastify's ajv learns it here.
const app = Fastify({
  ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, formats: { timezone: { type: 'string', validate: isTimeZone } } } },
});

const errorBody = (code: string, message: string, path?: string): string =>
  JSON.stringify({ errors: [path === undefined ? { code, message } : { code, message, path }] });

app.addHook('onRequest', async (request, reply) => {
  const header = request.headers.authorization;
  if (header === undefined) return reply.code(401).type('application/json').send(errorBody('missing_key', 'no Authorization header'));
  if (header !== `Bearer ${env.key}`) return reply.code(401).type('application/json').send(errorBody('invalid_key', 'unknown key'));
});

app.setErrorHandler((error: FastifyError, _request, reply) => {
  if (error.validation) {
    const errors = error.validation.map((v) => ({ code: 'validation_failed', message: `${v.instancePath} ${v.message ?? ''}`.trim(), path: v.instancePath }));
    return reply.code(400).type('application/json').send(JSON.stringify({ errors }));
  }
  const status = error.statusCode ?? 500;
  if (status < 500) return reply.code(status).type('application/json').send(errorBody(error.code, error.message));
  app.log.error(error);
  return reply.code(500).type('application/json').send(errorBody('internal', 'internal error'));
});

const accepted = async (reply: FastifyReply, write: SdkOp): Promise<FastifyReply> => {
  await queue.add(write.op, { write, at: Date.now() });
  return reply.code(202).send({ accepted: true });
};

const sdkLimit = 64 * 1024;

app.post<{ Body: IdentifyBody }>('/api/sdk/users', { schema: { body: IdentifyBody, response: { 202: Accepted } }, bodyLimit: sdkLimit }, (request, reply) =>
  accepted(reply, { op: 'identify', ...request.body }),
);

app.put<{ Params: { external_id: string }; Body: TagsBody }>(
  '/api/sdk/users/:external_id/tags',
  { schema: { body: TagsBody, response: { 202: Accepted } }, bodyLimit: sdkLimit },
  (request, reply) => accepted(reply, { op: 'tags', external_id: request.params.external_id, tags: request.body }),
);

app.post<{ Params: { external_id: string }; Body: SubscriptionBody }>(
  '/api/sdk/users/:external_id/subscriptions',
  { schema: { body: SubscriptionBody, response: { 202: Accepted } }, bodyLimit: sdkLimit },
  (request, reply) => accepted(reply, { op: 'subscribe', external_id: request.params.external_id, ...request.body }),
);

app.post<{ Body: EventBody }>('/api/sdk/events', { schema: { body: EventBody, response: { 202: Accepted } }, bodyLimit: sdkLimit }, (request, reply) =>
  accepted(reply, { op: 'event', ...request.body }),
);

/** All or nothing, as the engine's: the whole list is validated, then enqueued with one addBulk. */
app.post<{ Body: { operations: SdkOp[] } }>(
  '/api/sdk/batch',
  { schema: { body: BatchRequest, response: { 202: BatchAccepted } }, bodyLimit: 1024 * 1024 },
  async (request, reply) => {
    const at = Date.now();
    const { operations } = request.body;
    await queue.addBulk(operations.map((write) => ({ name: write.op, data: { write, at } })));
    return reply.code(202).send({ accepted: true, count: operations.length });
  },
);

app.get<{ Params: { external_id: string } }>('/api/users/:external_id', async (request, reply) => {
  const user = await readUser(reads, env.keyPrefix, request.params.external_id);
  if (user === null) return reply.code(404).type('application/json').send(errorBody('not_found', 'unknown user'));
  return reply.send(user);
});

await queue.waitUntilReady();
await app.listen({ host: '127.0.0.1', port: env.port });
const address = app.server.address();
logLine({ msg: 'listening', port: typeof address === 'object' && address !== null ? address.port : env.port });

let closing: Promise<void> | null = null;
const stop = (): Promise<void> => {
  closing ??= (async () => {
    await app.close();
    await queue.close();
    reads.disconnect();
    connection.disconnect();
  })();
  return closing;
};
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void stop().then(() => process.exit(0)));
