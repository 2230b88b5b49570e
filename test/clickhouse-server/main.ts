import { startClickHouseStandIn } from './stand-in.ts';

// Runs a stand-in until SIGINT or SIGTERM and prints its URL, to point TEST_CLICKHOUSE_URL at by hand:
//   node --import tsx test/clickhouse-server/main.ts
const standIn = await startClickHouseStandIn();
process.stdout.write(`${standIn.url}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void standIn.close().then(() => process.exit(0)));
}
