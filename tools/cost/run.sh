#!/usr/bin/env bash
# `make cost`: what each flow of requests costs in AWS, measured on the dev
# server against engines of its own (DynamoDB Local, moto) and priced with
# tools/cost/prices.json (PRICES=... for another region's). REPETITIONS
# (100) of each flow, one request after another; the table is printed and
# kept with what was measured in .local/cost/cost.json. With CAPACITY=1
# (`make capacity`) the store's trace is on too, and the capacity model
# (tools/cost/capacity.py) reads it: .local/cost/capacity.json; the run
# fails when a key passes half its partition's limit. The dev profile's
# build (the tests') serves: units, calls and log bytes are the code's,
# whatever the build; the function's own time is the one figure a debug
# build inflates, and at these memory sizes it is a small share of any
# total (it is in the table's JSON as GB-seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
export MOTO_PORT=${COST_MOTO_PORT:-5106} DYNAMODB_PORT=${COST_DYNAMODB_PORT:-8106}
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DYNAMODB_PORT
source tools/local/scripts/env.sh
REPETITIONS=${REPETITIONS:-100}
PRICES=${PRICES:-tools/cost/prices.json}
COST_PORT=${COST_PORT:-3106}
out=.local/cost
mkdir -p "$out"

echo "==> building the dev server and the admin CLI (dev profile)"
cargo build -q -p local -p admin
source tools/local/scripts/private_stack.sh
bin=$TARGET_DIR/debug
private_engines
setup=$($bin/admin setup-local 2>/dev/null)
# The dev server's dispatcher delivers webhooks from the local queue to
# the driver's receiver on loopback (development setting).
export WEBHOOK_QUEUE_URL=$(queue_url "$setup" webhooks)
export WEBHOOK_DLQ_URL=$(queue_url "$setup" webhooks-dlq)
export WEBHOOK_ALLOW_LOOPBACK_HTTP=true
log=$out/server.log
# The limit stays on (its write is part of every request) but high.
trace=""
[ "${CAPACITY:-0}" = 1 ] && trace=",store_trace=debug"
# Searches read every copy of the public cells (a fresh table's are all
# filled: docs/operations.md, "Upgrading the public cells' copies").
RATE_LIMIT_PER_WINDOW=100000000 PUBLIC_CELL_COPIES=8 SERVE_LOG="info$trace" serve_local "$COST_PORT" "$log"

echo "==> $REPETITIONS of each flow"
"$VENV/bin/python" tools/cost/drive.py "$COST_PORT" "$log" "$bin/admin" "$REPETITIONS" "$out/run.json" ${ONLY:+"$ONLY"}
stop_local
echo "==> priced ($PRICES)"
"$VENV/bin/python" tools/cost/cost.py report "$out/run.json" --prices "$PRICES" --out "$out/cost.json"
if [ "${CAPACITY:-0}" = 1 ]; then
    echo "==> capacity (tools/cost/capacity.py)"
    "$VENV/bin/python" tools/cost/capacity.py "$out/run.json" --out "$out/capacity.json" ${ZIPF:+--zipf "$ZIPF"}
fi
