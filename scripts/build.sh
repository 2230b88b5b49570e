#!/usr/bin/env bash
# Compiles the engine to JavaScript in dist/ (what bin/engine.js runs), or in the directory given
# inside the checkout, and copies the files it reads at run time: Lua scripts, SQL migrations and
# queries, the dashboard's client sources (bundled by the gateway when it starts), and
# package.json (the module type and version).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
rm -rf "$out"
npx tsc -p tsconfig.build.json --outDir "$out"
mkdir -p "$out/engine/clickhouse"
cp -r engine/lua "$out/engine/"
cp -r engine/clickhouse/migrations engine/clickhouse/queries "$out/engine/clickhouse/"
mkdir -p "$out/gateway/dashboard"
cp -r gateway/dashboard/client "$out/gateway/dashboard/"
cp package.json "$out/"
