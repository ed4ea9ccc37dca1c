#!/usr/bin/env bash
# `make load`: a bounded load test on loopback (tools/local/scripts/
# load_test.py): the dev server (bench-server profile) against engines of
# its own (DynamoDB Local, moto), LOAD_CONNECTIONS (100) connections for
# LOAD_SECONDS (30), once for each count of keys in LOAD_KEYS ("20 200"),
# each key an organization of its own; creates, reads and list pages mixed,
# the usual rate limit of each key on; then every acknowledged create is
# read back. Reports requests/s, p50/p99 and the CPU milliseconds per
# request of the server process (what Lambda bills beyond waiting), of
# DynamoDB Local and of the load generator, from /proc. Fails on any
# answer but 2xx and 429, and on a lost write. `make bench` runs it last.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MOTO_PORT=${LOAD_MOTO_PORT:-5106} DYNAMODB_PORT=${LOAD_DYNAMODB_PORT:-8106}
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DYNAMODB_PORT
source tools/local/scripts/env.sh
LOAD_SECONDS=${LOAD_SECONDS:-30}
LOAD_CONNECTIONS=${LOAD_CONNECTIONS:-100}
LOAD_KEYS=${LOAD_KEYS:-20 200}
LOAD_PORT=${LOAD_PORT:-3101}

cargo build -q --profile bench-server -p local -p admin
source tools/local/scripts/private_stack.sh
private_engines

py() { "$VENV/bin/python" "$@"; }
$bin/admin setup-local >/dev/null 2>&1
log=$STATE_DIR/load-server.log
serve_local "$LOAD_PORT" "$log"

status=0
for count in $LOAD_KEYS; do
    keys=()
    for _ in $(seq 1 "$count"); do
        keys+=("$(py -c "import json,sys; print(json.loads(sys.argv[1])['api_key'])" "$($bin/admin demo 2>/dev/null)")")
    done
    echo "==> load test: $LOAD_CONNECTIONS connections, $LOAD_SECONDS s, $count keys (server log: $log)"
    py tools/local/scripts/load_test.py "$LOAD_PORT" "$LOAD_SECONDS" "$LOAD_CONNECTIONS" \
        "$server" "$(engine_pid dynamodb)" "${keys[@]}" || status=1
done
exit "$status"
