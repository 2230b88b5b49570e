#!/usr/bin/env bash
# `bash scripts/quickstart.sh <sdk_key> <rest_key> <identity_secret> <base_url>`: prints the
# commands of the quick start (README "Quick start", printed by `make run`). They read the keys
# from shell variables set on the first lines, so each runs when pasted after those lines.
# Each comment that ends in `-> <status>` announces the HTTP status of the command below it
# (test/cli/quickstart.test.ts runs every command against an engine and checks it).
set -euo pipefail
[ "$#" -eq 4 ] || { echo "usage: $0 <sdk_key> <rest_key> <identity_secret> <base_url>" >&2; exit 2; }

printf 'SDK=%s\nREST=%s\nIDENTITY_SECRET=%s\nBASE=%s\n' "$1" "$2" "$3" "$4"
cat <<'EOT'

# register alice's iPhone for push (this creates alice)  -> 202
curl -sS -i -w '\n' -X POST "$BASE/api/sdk/users/alice/subscriptions" -H "Authorization: Bearer $SDK" -H 'Content-Type: application/json' \
  -d '{"type":"IOS_PUSH","token":"a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"}'

# send her a notification: recipients 1, delivered by the APNs simulator  -> 201
curl -sS -i -w '\n' -X POST "$BASE/api/notifications" -H "Authorization: Bearer $REST" -H 'Content-Type: application/json' \
  -d '{"include_external_user_ids":["alice"],"headings":{"en":"Hello"},"contents":{"en":"Your first notification"}}'

# its delivery records, one per attempt (within a second)  -> 200
curl -sS -i -w '\n' "$BASE/api/deliveries?external_id=alice" -H "Authorization: Bearer $REST"

# identify a user and merge tags  -> 202 {"accepted":true}
curl -sS -i -w '\n' -X POST "$BASE/api/sdk/users" -H "Authorization: Bearer $SDK" -H 'Content-Type: application/json' \
  -d '{"external_id":"alice","tags":{"plan":"pro","level":3}}'

# register an email subscription  -> 202
curl -sS -i -w '\n' -X POST "$BASE/api/sdk/users/alice/subscriptions" -H "Authorization: Bearer $SDK" -H 'Content-Type: application/json' \
  -d '{"type":"EMAIL","token":"alice@example.com"}'

# track an event  -> 202
curl -sS -i -w '\n' -X POST "$BASE/api/sdk/events" -H "Authorization: Bearer $SDK" -H 'Content-Type: application/json' \
  -d '{"external_id":"alice","name":"purchase","properties":{"sku":"A-1","amount":12.5}}'

# opt alice out of email: synchronous, durable before the answer  -> 200
curl -sS -i -w '\n' -X POST "$BASE/api/sdk/opt-out" -H "Authorization: Bearer $SDK" -H 'Content-Type: application/json' \
  -d '{"external_id":"alice","subscription_type":"EMAIL"}'

# read alice back as the apply workers stored her (REST key only)  -> 200
curl -sS -i -w '\n' "$BASE/api/users/alice" -H "Authorization: Bearer $REST"

# her events, recorded into ClickHouse by the recorder (within a second)  -> 200
curl -sS -i -w '\n' "$BASE/api/events?external_id=alice" -H "Authorization: Bearer $REST"

# a segment over the users mirror  -> 201
curl -sS -i -w '\n' -X POST "$BASE/api/segments" -H "Authorization: Bearer $REST" -H 'Content-Type: application/json' \
  -d '{"name":"pro users","filters":[{"field":"tag","key":"plan","relation":"=","value":"pro"}]}'

# its current size ({"name":"pro users","count":1} once alice is recorded)  -> 200
curl -sS -i -w '\n' "$BASE/api/segments/pro%20users/count" -H "Authorization: Bearer $REST"

# health (no key)  -> 200
curl -sS -i -w '\n' "$BASE/healthz"

# Prometheus metrics (no key)
curl -s "$BASE/metrics" | grep '^svc_'

# identity_hash of alice, for projects with identity verification on
printf alice | openssl dgst -sha256 -hmac "$IDENTITY_SECRET" | sed 's/^.* //'
EOT
