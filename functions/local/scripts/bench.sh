#!/usr/bin/env bash
# `make bench`: GET /api/v1/orgs through the dev server against the emulator
# (requests/s, p50/p99, DynamoDB calls per request), then the release `orgs`
# Lambda binary: size and time from process start to first served request.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source functions/local/scripts/env.sh
REQUESTS=${REQUESTS:-2000}
CONCURRENCY=${CONCURRENCY:-8}
BENCH_PORT=${BENCH_PORT:-3100}
COLD_RUNS=${COLD_RUNS:-5}

echo "==> building (dev server and driver: bench-server profile; orgs: release profile)"
cargo build -q --profile bench-server -p local -p admin
cargo build -q --release -p orgs

emulator=$(functions/local/scripts/emulator.sh start)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    if [ "$emulator" = started ]; then functions/local/scripts/emulator.sh stop; fi
}
trap cleanup EXIT

bin=target/bench-server
$bin/admin setup-local >/dev/null 2>&1
key=$($bin/admin demo 2>/dev/null | "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['api_key'])")

log=$STATE_DIR/bench-server.log
# The limit stays on (one counter write per request, as in production) but high.
RATE_LIMIT_PER_WINDOW=100000000 LOCAL_ADDR=127.0.0.1:$BENCH_PORT RUST_LOG=info LOG_FORMAT=json $bin/local >"$log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
    "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $BENCH_PORT), 0.3)" 2>/dev/null && break
    sleep 0.1
done

echo "==> GET /api/health (no AWS calls: the dev server's own cost): $REQUESTS requests, $CONCURRENCY connections"
$bin/bench load "127.0.0.1:$BENCH_PORT" /api/health "$key" "$REQUESTS" "$CONCURRENCY"
echo "==> GET /api/v1/orgs (key, rate limit, organization: against the emulator): $REQUESTS requests, $CONCURRENCY connections"
$bin/bench load "127.0.0.1:$BENCH_PORT" /api/v1/orgs "$key" "$REQUESTS" "$CONCURRENCY"
"$VENV/bin/python" - "$log" <<'PY'
import json, sys
calls = []
for line in open(sys.argv[1]):
    try:
        row = json.loads(line)
    except ValueError:
        continue
    if row.get("span", {}).get("route") == "/api/v1/orgs" and row.get("status") == 200:
        calls.append(row["ddb_calls"])
print(json.dumps({"requests_logged": len(calls), "ddb_calls_per_request": sum(calls) / max(len(calls), 1),
                  "ddb_calls_max": max(calls, default=0)}))
PY
kill "$server"; wait "$server" 2>/dev/null || true; server=""

echo "==> release orgs binary: size and cold start (process start to first response), $COLD_RUNS runs"
for _ in $(seq 1 "$COLD_RUNS"); do
    RATE_LIMIT_PER_WINDOW=100000000 $bin/bench cold target/release/orgs events/orgs-list.json "$key"
done
