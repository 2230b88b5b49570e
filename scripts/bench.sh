#!/usr/bin/env bash
# `make bench` and `npm run bench -- [scenario ...]`: installs npm packages and starts a local Redis
# when needed (as `make run` does), installs wrk (a write-cost closed-loop load) when it can, then
# runs the benchmark scenarios (bench/main.ts; all of them when none is named, `--list` names them)
# and writes their summary into docs/performance.md.
# Each scenario's settings (BENCH_SECONDS, BENCH_ROWS, ...) pass through the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# wrk from the Debian package, quietly: apt-get install first, `apt-get update` only when that
# fails. Without root (or sudo without a password) or apt-get, write-cost skips its wrk runs.
ensure_wrk() {
  command -v wrk >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || sudo -n true 2>/dev/null; }; then
    say "installing wrk with apt-get"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null 2>&1 ||
      { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null 2>&1; } || true
  fi
  command -v wrk >/dev/null 2>&1 || say "wrk is not installed and could not be (apt-get install wrk): write-cost skips its wrk runs"
}

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
ensure_node
ensure_node_modules
ensure_local_redis "$REDIS_URL" "${DATA_DIR:-./.data}/redis"
ensure_wrk
exec node --import tsx bench/main.ts "$@"
