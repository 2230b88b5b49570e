#!/usr/bin/env bash
# `make run`: everything a fresh Debian machine with Node 20 needs to try the engine locally.
# Installs npm packages, starts a local Redis if none answers at REDIS_URL, creates a demo project
# on first run (kept in $DATA_DIR/demo-project.json), prints ready-to-paste curl commands, then
# runs `engine start` (all roles) in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
DATA_DIR="${DATA_DIR:-./.data}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8080}"
demo_file="$DATA_DIR/demo-project.json"

ensure_node
ensure_node_modules
ensure_local_redis "$REDIS_URL" "$DATA_DIR/redis"
mkdir -p "$DATA_DIR"

# The demo project lives in Redis; a file whose keys Redis no longer knows (flushed or another
# Redis) is replaced by a new project.
if [ -f "$demo_file" ] && node --import tsx scripts/demo-live.ts "$demo_file"; then
  say "reusing the demo project in $demo_file"
else
  say "creating the demo project ($demo_file)"
  node bin/engine.js project create demo --json >"$demo_file.tmp"
  mv "$demo_file.tmp" "$demo_file"
fi

field() { node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'))[process.argv[2]]" "$demo_file" "$1"; }
project_id="$(field project_id)"
sdk_key="$(field sdk_key)"
rest_key="$(field rest_key)"
identity_secret="$(field identity_secret)"
base="http://$HOST:$PORT"
json="-H 'Content-Type: application/json'"

cat <<EOT

Demo project (identity verification off; saved in $demo_file)
  project id       $project_id
  SDK key          $sdk_key
  REST key         $rest_key
  identity secret  $identity_secret

Try it (the engine starts below, at $base):

  # identify a user and set tags
  curl -sS -i -w '\n' -X POST $base/api/sdk/users -H 'Authorization: Bearer $sdk_key' $json \\
    -d '{"external_id":"alice","tags":{"plan":"pro","level":3}}'

  # register an email subscription
  curl -sS -i -w '\n' -X POST $base/api/sdk/users/alice/subscriptions -H 'Authorization: Bearer $sdk_key' $json \\
    -d '{"type":"EMAIL","token":"alice@example.com"}'

  # track an event
  curl -sS -i -w '\n' -X POST $base/api/sdk/events -H 'Authorization: Bearer $sdk_key' $json \\
    -d '{"external_id":"alice","name":"purchase","properties":{"sku":"A-1","amount":12.5}}'

  # opt alice out of email (synchronous)
  curl -sS -i -w '\n' -X POST $base/api/sdk/opt-out -H 'Authorization: Bearer $sdk_key' $json \\
    -d '{"external_id":"alice","subscription_type":"EMAIL"}'

  # read alice back (REST key)
  curl -s $base/api/users/alice -H 'Authorization: Bearer $rest_key'

  # her events, a segment and its size, delivery records (REST key; ClickHouse, within a second)
  curl -s "$base/api/events?external_id=alice" -H 'Authorization: Bearer $rest_key'
  curl -sS -i -w '\n' -X POST $base/api/segments -H 'Authorization: Bearer $rest_key' $json \
    -d '{"name":"pro users","filters":[{"field":"tag","key":"plan","relation":"=","value":"pro"}]}'
  curl -s "$base/api/segments/pro%20users/count" -H 'Authorization: Bearer $rest_key'
  curl -s "$base/api/deliveries?status=failed&limit=10" -H 'Authorization: Bearer $rest_key'

  # health and Prometheus metrics
  curl -s $base/healthz
  curl -s $base/metrics | grep '^svc_'

  # identity_hash for a user, when identity verification is on
  printf alice | openssl dgst -sha256 -hmac '$identity_secret' | sed 's/^.* //'

EOT

say "starting the engine (all roles) on $base; Ctrl-C stops it"
export DATA_DIR HOST PORT
exec node bin/engine.js start
