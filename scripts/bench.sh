#!/usr/bin/env bash
# `make bench` and `npm run bench -- [scenario ...]`: installs npm packages and starts a local Redis
# when needed (as `make run` does), then runs the benchmark scenarios (bench/main.ts; all of them
# when none is named, `--list` names them) and writes their summary into docs/performance.md.
# Each scenario's settings (BENCH_SECONDS, BENCH_ROWS, ...) pass through the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
ensure_node
ensure_node_modules
ensure_local_redis "$REDIS_URL" "${DATA_DIR:-./.data}/redis"
exec node --import tsx bench/main.ts "$@"
