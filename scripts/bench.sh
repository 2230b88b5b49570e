#!/usr/bin/env bash
# `make bench`: installs npm packages and starts a local Redis when needed (as `make run` does),
# then runs the benchmarks in turn: ingest (bench/ingest.ts), recorder (bench/recorder.ts) and
# dashboard queries on 20M rows (bench/deliveries-query.ts). BENCH_ONLY=<name> runs one of them;
# their settings (BENCH_SECONDS, BENCH_ROWS, ROWS, ...) pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
ensure_node
ensure_node_modules
ensure_local_redis "$REDIS_URL" "${DATA_DIR:-./.data}/redis"
status=0
for name in ingest recorder deliveries-query; do
  if [ -n "${BENCH_ONLY:-}" ] && [ "$BENCH_ONLY" != "$name" ]; then continue; fi
  echo "== bench/$name.ts" >&2
  node --import tsx "bench/$name.ts" || status=1
done
exit $status
