import { Ajv } from 'ajv';
import t from 'tap';
import { insertJsonLines, insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { migrate } from '../../engine/infra/clickhouse/migrations.ts';
import { OutcomeEntry } from '../../schemas/outcomes.ts';
import { testClickHouse, rows } from './embedded.ts';

const ch = await testClickHouse(t);
t.before(async () => {
  await migrate(ch);
});

const at = '2026-11-22 10:00:01.234';
/** One row per table the recorder (or, for webhook_attempts, the webhooks role) inserts into, with every column set. */
const samples: Record<string, Record<string, unknown>> = {
  message_deliveries: {
    project: 'p1',
    id: 'n1:s1:1',
    stream_id: '1700000000000-0',
    notification_id: 'n1',
    external_id: 'u1',
    channel: 'PUSH',
    subscription_type: 'IOS_PUSH',
    token_tail: '…a9f3',
    attempt: 1,
    status: 'failed',
    error_code: 'apns_410_Unregistered',
    hint: 'The device token is no longer valid; the subscription was retired.',
    provider_message_id: null,
    latency_ms: 12,
    retrying: false,
    at,
  },
  receipts: { project: 'p1', svc_message_id: 'n1', external_id: 'u1', receipt: 'opened', stream_id: '1700000000001-0', at },
  events: {
    project: 'p1',
    external_id: 'u1',
    name: 'purchase',
    properties: JSON.stringify({ amount: 12.5 }),
    idempotency_key: 'k1',
    stream_id: '1700000000002-0',
    at,
  },
  users: {
    project: 'p1',
    external_id: 'u1',
    tags: { level: '7', language: 'pt-BR' },
    tag_numbers: { level: 7 },
    subscription_types: ['IOS_PUSH', 'EMAIL'],
    opted_out: ['SMS'],
    created_at: at,
    updated_at: at,
    version: 1,
    stream_id: '1700000000003-0',
  },
  webhook_attempts: {
    project: 'p1',
    webhook_id: 'w1',
    event_id: 'e1',
    event_type: 'delivery.failed',
    notification_id: 'n1',
    attempt: 2,
    status: 'failed',
    response_code: 503,
    latency_ms: 31,
    error: 'Service Unavailable',
    at,
  },
};

const deliveryColumns = {
    project: 'String',
    id: 'String',
    stream_id: 'String',
    notification_id: 'String',
    external_id: 'String',
    channel: 'String',
    subscription_type: 'Nullable(String)',
    token_tail: 'Nullable(String)',
    attempt: 'UInt16',
    status: 'String',
    error_code: 'Nullable(String)',
    hint: 'Nullable(String)',
    provider_message_id: 'Nullable(String)',
    latency_ms: 'Nullable(UInt32)',
    retrying: 'Bool',
    at: "DateTime64(3, 'UTC')",
};

const expectedColumns: Record<string, Record<string, string>> = {
  message_deliveries_in: deliveryColumns,
  message_deliveries: {
    project: 'LowCardinality(String)',
    id: 'String',
    stream_id: 'String',
    notification_id: 'String',
    external_id: 'String',
    channel: 'LowCardinality(String)',
    subscription_type: 'LowCardinality(Nullable(String))',
    token_tail: 'Nullable(String)',
    attempt: 'UInt16',
    status: 'LowCardinality(String)',
    error_code: 'LowCardinality(Nullable(String))',
    hint: 'Nullable(String)',
    provider_message_id: 'Nullable(String)',
    latency_ms: 'Nullable(UInt32)',
    retrying: 'Bool',
    at: "DateTime64(3, 'UTC')",
  },
  receipts: {
    project: 'LowCardinality(String)',
    svc_message_id: 'String',
    external_id: 'String',
    receipt: 'LowCardinality(String)',
    stream_id: 'String',
    at: "DateTime64(3, 'UTC')",
  },
  events: {
    project: 'LowCardinality(String)',
    external_id: 'String',
    name: 'String',
    properties: 'String',
    idempotency_key: 'Nullable(String)',
    stream_id: 'String',
    at: "DateTime64(3, 'UTC')",
  },
  users: {
    project: 'LowCardinality(String)',
    external_id: 'String',
    tags: 'Map(String, String)',
    tag_numbers: 'Map(String, Float64)',
    subscription_types: 'Array(LowCardinality(String))',
    opted_out: 'Array(LowCardinality(String))',
    created_at: "DateTime64(3, 'UTC')",
    updated_at: "DateTime64(3, 'UTC')",
    version: 'UInt64',
    stream_id: 'String',
  },
  webhook_attempts: {
    project: 'LowCardinality(String)',
    webhook_id: 'String',
    event_id: 'String',
    event_type: 'LowCardinality(String)',
    notification_id: 'String',
    attempt: 'UInt16',
    status: 'LowCardinality(String)',
    response_code: 'UInt16',
    latency_ms: 'UInt32',
    error: 'String',
    at: "DateTime64(3, 'UTC')",
  },
};

const count = async (table: string): Promise<number> =>
  Number((await rows<{ n: string }>(ch, 'SELECT count() AS n FROM {table:Identifier}', { table }))[0]?.n);

t.test('each table has the expected columns', async (t) => {
  for (const [table, columns] of Object.entries(expectedColumns)) {
    const described = await rows<{ name: string; type: string }>(ch, 'DESCRIBE TABLE {table:Identifier}', { table });
    t.same(Object.fromEntries(described.map((c) => [c.name, c.type])), columns, table);
  }
});

t.test('an insert repeated three times with one deduplication token leaves one row', async (t) => {
  for (const [table, row] of Object.entries(samples)) {
    for (let i = 0; i < 3; i++) await insertRows(ch, table, [row], `batch:${table}:1`);
    t.equal(await count(table), 1, table);
  }
  const [stored] = await rows<Record<string, unknown>>(ch, 'SELECT * FROM message_deliveries');
  t.same(stored, { ...samples['message_deliveries'], at }, 'a delivery row reads back as written');
});

t.test('regression: an insert after a deduplicated one is not dropped by the leftover token', async (t) => {
  // chDB applies settings as session-wide SETs; without insertRows resetting the token, this
  // different row would be taken for the previous block and silently dropped.
  const row = { ...samples['receipts'], stream_id: '1700000000009-0', receipt: 'clicked' };
  await insertRows(ch, 'receipts', [row]);
  t.equal(await count('receipts'), 2);
});

t.test('JSON-text inserts through message_deliveries_in: a repeated token leaves one block, and the token does not outlive its insert', async (t) => {
  const lines = (...ids: string[]) => Buffer.from(ids.map((id) => JSON.stringify({ ...samples['message_deliveries'], project: 'raw', id })).join('\n'));
  for (let i = 0; i < 3; i++) await insertJsonLines(ch, 'message_deliveries_in', lines('r1', 'r2'), 'raw:1');
  const ids = async () => (await rows<{ id: string }>(ch, "SELECT id FROM message_deliveries WHERE project = 'raw' ORDER BY id")).map((r) => r.id);
  t.same(await ids(), ['r1', 'r2'], 'three inserts with one token: one copy in message_deliveries');
  await insertJsonLines(ch, 'message_deliveries_in', lines('r3'), 'raw:2');
  await insertRows(ch, 'message_deliveries', [{ ...samples['message_deliveries'], project: 'raw', id: 'r4' }]);
  t.same(await ids(), ['r1', 'r2', 'r3', 'r4'], 'other tokens, and no token, insert');
  t.equal(await count('message_deliveries_in'), 0, 'the landing table keeps nothing');
  const [stored] = await rows<Record<string, unknown>>(ch, "SELECT * FROM message_deliveries WHERE project = 'raw' AND id = 'r3'");
  t.same(stored, { ...samples['message_deliveries'], project: 'raw', id: 'r3', at }, 'every column arrives as written');
});

t.test('message_deliveries_in refuses a batch with a row the outcome schema refuses, and inserts none of it', async (t) => {
  const good = { ...samples['message_deliveries'], project: 'strict' };
  const bad: Record<string, Record<string, unknown>> = {
    'an unknown status': { status: 'lost' },
    'an unknown channel': { channel: 'FAX' },
    'an unknown subscription type': { subscription_type: 'PAGER' },
    'an empty id': { id: '' },
    'an empty error code': { error_code: '' },
    'attempt 0': { attempt: 0 },
    'an external_id over 128 characters': { external_id: 'u'.repeat(129) },
    'a token tail over 16 characters': { token_tail: 'x'.repeat(17) },
    'an unknown field': { receipt: 'opened' },
    'null where the column has none': { retrying: null },
  };
  for (const [what, change] of Object.entries(bad)) {
    const batch = Buffer.from([JSON.stringify({ ...good, id: 'ok' }), JSON.stringify({ ...good, ...change })].join('\n'));
    await t.rejects(insertJsonLines(ch, 'message_deliveries_in', batch, `strict:${what}`), what);
  }
  t.equal(Number((await rows<{ n: string }>(ch, "SELECT count() AS n FROM message_deliveries WHERE project = 'strict'"))[0]?.n), 0, 'no row of a refused batch');
});

t.test('the users mirror keeps the newest version of a user', async (t) => {
  await insertRows(ch, 'users', [{ ...samples['users'], version: 3, tags: { level: '9' }, tag_numbers: { level: 9 } }], 'batch:users:3');
  await insertRows(ch, 'users', [{ ...samples['users'], version: 2, tags: { level: '8' }, tag_numbers: { level: 8 } }], 'batch:users:2');
  const final = await rows<{ level: number }>(ch, "SELECT tag_numbers['level'] AS level FROM users FINAL WHERE project = {p:String} AND external_id = {u:String}", {
    p: 'p1',
    u: 'u1',
  });
  t.same(final, [{ level: 9 }]);
});

t.test('query parameters make an injection attempt inert', async (t) => {
  const attempts = ["x' OR 1=1 --", "u1' OR '1'='1", 'u1; DROP TABLE events', "\\' OR 1=1 --"];
  for (const value of attempts) {
    const found = await rows(ch, 'SELECT external_id FROM events WHERE project = {p:String} AND external_id = {u:String}', { p: 'p1', u: value });
    t.same(found, [], `${JSON.stringify(value)} matches nothing`);
  }
  await insertRows(ch, 'events', [{ ...samples['events'], external_id: "x' OR 1=1 --", stream_id: '1700000000010-0' }], 'batch:events:2');
  const exact = await rows<{ external_id: string }>(ch, 'SELECT external_id FROM events WHERE project = {p:String} AND external_id = {u:String}', {
    p: 'p1',
    u: "x' OR 1=1 --",
  });
  t.same(exact, [{ external_id: "x' OR 1=1 --" }], 'the value is matched literally');
  t.equal(await count('events'), 2, 'no table was dropped or changed');
});

t.test('an outcome stream entry validates and maps onto message_deliveries columns', async (t) => {
  const entry: OutcomeEntry = {
    id: 'n1:s1:1',
    project: 'p1',
    notification_id: 'n1',
    external_id: 'u1',
    channel: 'PUSH',
    subscription_type: 'IOS_PUSH',
    token_tail: '…a9f3',
    attempt: 1,
    status: 'failed',
    error_code: 'apns_410_Unregistered',
    hint: 'The device token is no longer valid; the subscription was retired.',
    provider_message_id: null,
    latency_ms: 12,
    retrying: true,
    at: Date.parse('2026-11-22T10:00:01.234Z'),
  };
  const validate = new Ajv({ allErrors: true }).compile(OutcomeEntry);
  t.ok(validate(entry), JSON.stringify(validate.errors));
  t.notOk(validate({ ...entry, status: 'lost' }), 'an unknown status is refused');
  t.notOk(validate({ ...entry, receipt: 'opened' }), 'receipt is not part of an outcome');
  const columns = (await rows<{ name: string }>(ch, 'DESCRIBE TABLE message_deliveries')).map((c) => c.name);
  t.same(
    Object.keys(OutcomeEntry.properties).filter((field) => !columns.includes(field)),
    [],
    'every outcome field has its column',
  );
});
