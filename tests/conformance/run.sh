#!/usr/bin/env bash
# `make conformance`: the contract gate. Starts (or reuses) the engines,
# serves every router from the dev server on a free port with a table of this
# run's own and the rate limit raised for this server only, creates an
# organization with an all-scopes key (plus a partner organization, a site,
# a factory, a driver, a receiving point and a truck for body references),
# with stand-ins of the geocoding provider and the issue tracker, then
#   1. runs schemathesis (tests/conformance/schemathesis.toml) against the
#      served /openapi.yaml: every check, every phase;
#   2. opens /docs in headless Chromium with no network and checks that
#      every operation of the description is on the page (screenshot saved);
#   3. (beside schemathesis, in fact) generates three clients from the
#      served description and drives one integration flow through each
#      (tests/clients/run.sh), with an organization of their own.
# Writes .local/conformance/summary.json; exits non-zero on any failure.
#
#   CONFORMANCE_MAX_EXAMPLES=200 make conformance   # a longer run
#   CONFORMANCE_SEED=123 make conformance           # replay a seed
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/local/scripts/env.sh
out=$STATE_DIR/conformance
rm -rf "$out"
mkdir -p "$out"

in_use() { "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.3)" 2>/dev/null; }
port=${CONFORMANCE_PORT:-3200}
while in_use "$port"; do port=$((port + 1)); done
base=http://127.0.0.1:$port

echo "==> building the dev server and the admin CLI"
# The workspace's binaries, built as `make test` builds them (its features:
# done already there).
cargo build -q --locked --workspace --bins

started=$(tools/local/scripts/engines.sh start)
export TABLE_NAME=conformance-$(date +%s)-$$
server=""
providers=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    if [ -n "$providers" ]; then kill "$providers" 2>/dev/null; wait "$providers" 2>/dev/null || true; fi
    # boto3 reads AWS_DEFAULT_REGION, not AWS_REGION: name the region.
    "$VENV/bin/python" -c "import boto3,sys; boto3.client('dynamodb', endpoint_url=sys.argv[1], region_name=sys.argv[3]).delete_table(TableName=sys.argv[2])" \
        "$AWS_ENDPOINT_URL_DYNAMODB" "$TABLE_NAME" "$AWS_REGION" 2>/dev/null || true
    # shellcheck disable=SC2086 # the names of the engines this run started
    tools/local/scripts/engines.sh stop $started
}
trap cleanup EXIT
echo "==> engines (started: ${started:-none, reused}); table $TABLE_NAME"
setup=$($TARGET_DIR/debug/admin setup-local 2>/dev/null)
# The retry route queues deliveries; the dev server's dispatcher takes them.
export WEBHOOK_QUEUE_URL=$(queue_url "$setup" webhooks)
export WEBHOOK_DLQ_URL=$(queue_url "$setup" webhooks-dlq)

# Geocoding and support tickets reach stand-ins of their providers
# (tests/conformance/providers.py), so their success paths are generated too.
"$VENV/bin/python" tests/conformance/providers.py "$out/providers.port" &
providers=$!
# Waits for the event, at most a minute (a starved machine starts slowly).
waited() { # waited WHAT LOG CHECK...: CHECK until it holds, or fail naming WHAT
    local what=$1 log=$2
    shift 2
    for _ in $(seq 1 600); do "$@" && return 0; sleep 0.1; done
    echo "conformance: $what did not start within a minute; $log:" >&2
    tail -20 "$log" >&2 2>/dev/null
    exit 1
}
waited "the providers' stand-ins" /dev/null test -s "$out/providers.port"
provider_base=http://127.0.0.1:$(cat "$out/providers.port")
export GEOCODE_API_KEY=conformance-geocode-key GEOCODE_URL=$provider_base/maps/api/geocode/json
export SUPPORT_GITHUB_REPOSITORY=acme/support SUPPORT_GITHUB_TOKEN=conformance-token SUPPORT_GITHUB_API_URL=$provider_base

RATE_LIMIT_PER_WINDOW=1000000000 LOCAL_ADDR=127.0.0.1:$port RUST_LOG=warn LOG_FORMAT=json \
    $TARGET_DIR/debug/local >"$out/server.log" 2>&1 &
server=$!
waited "the dev server" "$out/server.log" in_use "$port"

json() { "$VENV/bin/python" -c "import json,sys; print(json.loads(sys.argv[1])$2)" "$1"; }
demo=$($TARGET_DIR/debug/admin demo 2>/dev/null)
partner=$($TARGET_DIR/debug/admin create-org --name "Partner $(date +%s%N)" --public-api 2>/dev/null)
export CONFORMANCE_BASE_URL=$base
export CONFORMANCE_KEY=$(json "$demo" "['api_key']")
export CONFORMANCE_ORG_ID=$(json "$demo" "['org_id']")
export CONFORMANCE_PARTNER_ORG_ID=$(json "$partner" "['org']['id']")
site=$(curl -sf -X POST -H "Authorization: Bearer $CONFORMANCE_KEY" -H 'Content-Type: application/json' \
    -d '{"name": "Conformance site"}' "$base/api/v1/sites")
export CONFORMANCE_SITE_ID=$(json "$site" "['data']['id']")
factory=$(curl -sf -X POST -H "Authorization: Bearer $CONFORMANCE_KEY" -H 'Content-Type: application/json' \
    -d '{"name": "Conformance plant"}' "$base/api/v1/factories")
export CONFORMANCE_FACTORY_ID=$(json "$factory" "['data']['id']")
driver=$(curl -sf -X POST -H "Authorization: Bearer $CONFORMANCE_KEY" -H 'Content-Type: application/json' \
    -d '{"first_name": "Conformance", "last_name": "Driver", "phone": "+3584000'$((RANDOM % 90000 + 10000))'", "role": "driver"}' \
    "$base/api/v1/members")
export CONFORMANCE_DRIVER_ID=$(json "$driver" "['data']['id']")
point=$(curl -sf -X POST -H "Authorization: Bearer $CONFORMANCE_KEY" -H 'Content-Type: application/json' \
    -d '{"site_id": "'$CONFORMANCE_SITE_ID'", "name": "Conformance gate"}' "$base/api/v1/receiving-points")
export CONFORMANCE_POINT_ID=$(json "$point" "['data']['id']")
truck=$(curl -sf -X POST -H "Authorization: Bearer $CONFORMANCE_KEY" -H 'Content-Type: application/json' \
    -d '{"orgId": "'$CONFORMANCE_ORG_ID'", "license": "CNF-'$((RANDOM % 900 + 100))'", "country": "ee"}' "$base/api/v1/trucks")
export CONFORMANCE_TRUCK_ID=$(json "$truck" "['data']['id']")

curl -sf "$base/openapi.yaml" >"$out/openapi.yaml"

# The clients integrators generate, each driven through one flow, beside
# schemathesis (two cores), with an organization of their own: the
# generated cases fill the gate's (webhooks have a cap).
echo "==> clients generated from $base/openapi.yaml, one flow each, beside schemathesis"
clients_demo=$($TARGET_DIR/debug/admin demo 2>/dev/null)
tests/clients/run.sh "$base" "$(json "$clients_demo" "['api_key']")" "$out" >"$out/clients.log" 2>&1 &
clients_job=$!

echo "==> schemathesis against $base/openapi.yaml"
seed=()
if [ -n "${CONFORMANCE_SEED:-}" ]; then seed=(--seed "$CONFORMANCE_SEED"); fi
examples=()
if [ -n "${CONFORMANCE_MAX_EXAMPLES:-}" ]; then examples=(--max-examples "$CONFORMANCE_MAX_EXAMPLES"); fi
# CONFORMANCE_ARGS: more schemathesis options, e.g. a focused run with
# CONFORMANCE_ARGS='--include-path-regex /reports/'.
extra=()
if [ -n "${CONFORMANCE_ARGS:-}" ]; then read -ra extra <<<"$CONFORMANCE_ARGS"; fi
status=0
"$VENV/bin/schemathesis" --config-file tests/conformance/schemathesis.toml --no-color run \
    "$base/openapi.yaml" "${seed[@]}" "${examples[@]}" "${extra[@]}" \
    --report ndjson --report-dir "$out" || status=$?

clients=0
wait "$clients_job" || clients=$?
echo "==> the clients' flows"
cat "$out/clients.log"

echo "==> the HTML reference in headless Chromium"
browser=0
"$VENV/bin/python" tests/conformance/docs_in_browser.py "$base" "$out" || browser=$?

"$VENV/bin/python" tests/conformance/summary.py "$out" "$status" "$browser" "$clients"
[ "$status" -eq 0 ] && [ "$browser" -eq 0 ] && [ "$clients" -eq 0 ]
