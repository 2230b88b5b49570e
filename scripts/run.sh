#!/usr/bin/env bash
# `make run`: everything a fresh Debian machine with Node 20, 22, 24 or 26 needs to try the engine
# locally.
# Installs npm packages, builds dist/, starts a local Redis if none answers at REDIS_URL, creates a
# demo project on first run (kept in $DATA_DIR/demo-project.json), starts the provider simulators
# in demo mode and registers them as the demo project's providers, prints ready-to-paste curl
# commands (scripts/quickstart.sh), then runs `engine start` (all roles) in the foreground.
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
# bubblewrap: the sandbox of the embedded ClickHouse's process (docs/sql.md#layers).
ensure_commands bwrap:bubblewrap
say "building dist/ (scripts/build.sh)"
bash scripts/build.sh
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

cat <<EOT

Demo project (identity verification off; saved in $demo_file)
  project id       $project_id
  SDK key          $sdk_key
  REST key         $rest_key
  identity secret  $identity_secret

Once the engine below has started:
  dashboard        $base/dashboard   (paste the REST key)
  API reference    $base/api/docs

Try it: paste the variables, then any command.

EOT
# The provider simulators (simulators/) stand in for APNs, FCM, Web Push, Twilio and SendGrid,
# so notifications are delivered and recorded with no account anywhere.
sims_dir="$DATA_DIR/simulators"
rm -f "$sims_dir/simulators.json"
say "starting the provider simulators (demo mode; $sims_dir)"
node --import tsx simulators/main.ts --out "$sims_dir" >"$DATA_DIR/simulators.log" 2>&1 &
sims_pid=$!
trap 'kill "$sims_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  [ -f "$sims_dir/simulators.json" ] && break
  kill -0 "$sims_pid" 2>/dev/null || die "the simulators did not start; see $DATA_DIR/simulators.log"
  sleep 0.2
done
[ -f "$sims_dir/simulators.json" ] || die "the simulators did not start in time; see $DATA_DIR/simulators.log"
for provider in apns fcm webpush twilio sendgrid; do
  node bin/engine.js providers set "$project_id" "$provider" --file "$sims_dir/$provider.json" >/dev/null
done
say "registered the simulators as the demo project's providers"

bash scripts/quickstart.sh "$sdk_key" "$rest_key" "$identity_secret" "$base"
echo

say "starting the engine (all roles) on $base; Ctrl-C stops it"
# PROVIDER_CA_FILE replaces the CAs trusted for providers: the public ones and the simulators', so
# that a browser's real push service (the web SDK's demo, /demo) is reached too.
node -e 'const fs = require("fs"); fs.writeFileSync(process.argv[2], [...require("tls").rootCertificates, fs.readFileSync(process.argv[1], "utf8")].join("\n"))' \
  "$sims_dir/ca.pem" "$sims_dir/trusted.pem"
# The simulators listen on loopback, which Web Push endpoints may not name in production.
export DATA_DIR HOST PORT PROVIDER_CA_FILE="$sims_dir/trusted.pem" OUTBOUND_ALLOW_PRIVATE=true
# The node flags the engine is measured and documented with (docs/configuration.md#operations).
read -ra node_flags <<<"$(node -p 'require("./package.json").config.node_flags')"
node "${node_flags[@]}" bin/engine.js start
