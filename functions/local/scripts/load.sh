#!/usr/bin/env bash
# `make load`: a bounded load test on loopback (functions/local/scripts/
# load_test.py): the dev server (bench-server profile) against an emulator
# of its own, LOAD_CONNECTIONS (100) connections for LOAD_SECONDS (30) over
# LOAD_KEYS (20) keys of organizations of their own, creates, reads and
# list pages mixed, the usual rate limit of each key on; then every
# acknowledged create is read back. Fails on any answer but 2xx and 429,
# and on a lost write. `make bench` runs it last.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export MOTO_PORT=${LOAD_MOTO_PORT:-5106}
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT
source functions/local/scripts/env.sh
LOAD_SECONDS=${LOAD_SECONDS:-30}
LOAD_CONNECTIONS=${LOAD_CONNECTIONS:-100}
LOAD_KEYS=${LOAD_KEYS:-20}
LOAD_PORT=${LOAD_PORT:-3101}
# Behind 100 connections a call waits seconds in the emulator's queue
# (about 2.5 s at p50 here): env.sh gives attempts 30 s locally.

cargo build -q --profile bench-server -p local -p admin
source functions/local/scripts/private_stack.sh
private_emulator

py() { "$VENV/bin/python" "$@"; }
$bin/admin setup-local >/dev/null 2>&1
keys=()
for _ in $(seq 1 "$LOAD_KEYS"); do
    keys+=("$(py -c "import json,sys; print(json.loads(sys.argv[1])['api_key'])" "$($bin/admin demo 2>/dev/null)")")
done

log=$STATE_DIR/load-server.log
serve_local "$LOAD_PORT" "$log"

echo "==> load test: $LOAD_CONNECTIONS connections, $LOAD_SECONDS s, $LOAD_KEYS keys (server log: $log)"
py functions/local/scripts/load_test.py "$LOAD_PORT" "$LOAD_SECONDS" "$LOAD_CONNECTIONS" "${keys[@]}"
