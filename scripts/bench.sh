#!/usr/bin/env bash
# `make bench`: installs npm packages and starts a local Redis when needed (as `make run` does),
# then runs the ingest benchmark (bench/ingest.ts; BENCH_SECONDS etc. pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
ensure_node
ensure_node_modules
ensure_local_redis "$REDIS_URL" "${DATA_DIR:-./.data}/redis"
exec node --import tsx bench/ingest.ts
