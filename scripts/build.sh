#!/usr/bin/env bash
# Compiles the engine to JavaScript in dist/ (what bin/engine.js runs), or in the directory given
# inside the checkout, bundles the dashboard's client and the web SDK (sdk/web, printing its sizes) into it (esbuild, a development package: the
# build runs without it), and copies the files it reads at run time: Lua scripts, SQL migrations
# and queries, and package.json (the module type and version).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
rm -rf "$out"
npx tsc -p tsconfig.build.json --outDir "$out"
node --import tsx scripts/bundle-dashboard.ts "$out/gateway/dashboard/bundle"
node --import tsx sdk/web/build.ts "$out/gateway/static/web-sdk"
mkdir -p "$out/engine/infra/clickhouse"
mkdir -p "$out/engine/infra/scripts"
cp -r engine/infra/scripts/lua "$out/engine/infra/scripts/"
cp -r engine/infra/clickhouse/migrations engine/infra/clickhouse/queries "$out/engine/infra/clickhouse/"
cp package.json "$out/"
