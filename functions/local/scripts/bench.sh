#!/usr/bin/env bash
# `make bench`: GET /api/v1/orgs, pages of surplus loads, the report
# summary (10,000 vs 100 loads), nearby search over 10,000 places and
# webhook deliveries through the dev server against the emulator
# (requests/s, p50/p99, DynamoDB calls per request by route, rollup items a
# summary reads), then the release `orgs` Lambda binary: size and time from
# process start to first served request.
set -euo pipefail
cd "$(dirname "$0")/../../.."
# An emulator of the bench's own, emptied first: one that tests and CI runs
# filled with tables answers several times slower.
export MOTO_PORT=${BENCH_MOTO_PORT:-5105}
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT
source functions/local/scripts/env.sh
REQUESTS=${REQUESTS:-2000}
CONCURRENCY=${CONCURRENCY:-8}
BENCH_PORT=${BENCH_PORT:-3100}
COLD_RUNS=${COLD_RUNS:-5}

echo "==> building (dev server and driver: bench-server profile; orgs: release profile)"
cargo build -q --profile bench-server -p local -p admin
cargo build -q --release -p orgs

emulator=$(functions/local/scripts/emulator.sh start)
curl -sf -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    if [ "$emulator" = started ]; then functions/local/scripts/emulator.sh stop; fi
}
trap cleanup EXIT

bin=target/bench-server
setup=$($bin/admin setup-local 2>/dev/null)
# The dev server's dispatcher delivers webhooks from the local queue to a
# receiver on loopback (development setting).
export WEBHOOK_QUEUE_URL=$(queue_url "$setup" webhooks)
export WEBHOOK_DLQ_URL=$(queue_url "$setup" webhooks-dlq)
export WEBHOOK_ALLOW_LOOPBACK_HTTP=true
demo=$($bin/admin demo 2>/dev/null)
key=$(echo "$demo" | "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['api_key'])")
org_id=$(echo "$demo" | "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['org_id'])")

log=$STATE_DIR/bench-server.log
# The limit stays on (one counter write per request, as in production) but high.
RATE_LIMIT_PER_WINDOW=100000000 LOCAL_ADDR=127.0.0.1:$BENCH_PORT RUST_LOG=info LOG_FORMAT=json $bin/local >"$log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
    "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $BENCH_PORT), 0.3)" 2>/dev/null && break
    sleep 0.1
done

# Loads to page through: one site, LOADS loads written in bulk (the same
# items the API writes), then the first page of each listing.
LOADS=${LOADS:-1000}
new_site() { # KEY -> the id of a new site of the key's organization
    "$VENV/bin/python" - "$BENCH_PORT" "$1" <<'PY'
import json, sys, urllib.request
port, key = sys.argv[1:]
body = json.dumps({"name": "Bench site", "street_address": "Bench street 1", "lat": 60.17, "lng": 24.94}).encode()
request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/sites", body, method="POST",
                                  headers={"X-Api-Key": key, "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request))["data"]["id"])
PY
}
site=$(new_site "$key")
echo "==> seeding $LOADS surplus loads on site $site"
$bin/admin seed-loads --org "$org_id" --site "$site" --count "$LOADS"

bench() { # PATH: REQUESTS requests over CONCURRENCY connections
    $bin/bench load "127.0.0.1:$BENCH_PORT" "$1" "$key" "$REQUESTS" "$CONCURRENCY"
}
echo "==> GET /api/health (no AWS calls: the dev server's own cost): $REQUESTS requests, $CONCURRENCY connections"
bench /api/health
echo "==> GET /api/v1/orgs (key, rate limit, organization: against the emulator)"
bench /api/v1/orgs
echo "==> GET /api/v1/surpluses, first page (50 rows) of $LOADS loads"
bench /api/v1/surpluses
echo "==> GET /api/v1/surpluses?status=open&site_id=...&limit=100 (site index, filtered)"
bench "/api/v1/surpluses?status=open&site_id=$site&limit=100"
# The summary's cost must not grow with the loads: 10,000 and 100 delivered
# loads over a year, in two organizations, the same year-long window.
BIG=${BIG:-10000}
SMALL=${SMALL:-100}
year="from=$(date -u -d '365 days ago' +%F)&to=$(date -u +%F)"
for n in "$BIG" "$SMALL"; do
    demo=$($bin/admin demo 2>/dev/null)
    k=$(echo "$demo" | "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['api_key'])")
    o=$(echo "$demo" | "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['org_id'])")
    echo "==> seeding $n delivered loads over 365 days"
    $bin/admin seed-loads --org "$o" --site "$(new_site "$k")" --count "$n" --days 365 --delivered
    echo "==> GET /api/v1/reports/summary over a year of $n delivered loads"
    $bin/bench load "127.0.0.1:$BENCH_PORT" "/api/v1/reports/summary?$year" "$k" "$REQUESTS" "$CONCURRENCY"
done

# Nearby search over PLACES places of 100 organizations within 150 km of
# Helsinki: the items read must follow the cells the circle covers, not
# the 10,000 points.
PLACES=${PLACES:-10000}
echo "==> seeding $PLACES places (receiving points, half public; sites; factories) of 100 organizations within 150 km"
$bin/admin seed-places --org "$org_id" --orgs 100 --count "$PLACES" --lat 60.17 --lng 24.94 --spread-km 150
echo "==> GET /api/v1/places/nearby (receiving points within 40 km: the default)"
bench "/api/v1/places/nearby?lat=60.17&lng=24.94"
echo "==> GET /api/v1/places/nearby (every type within 100 km, 50 nearest)"
bench "/api/v1/places/nearby?lat=60.17&lng=24.94&types=receiving_point,site,factory&radius_km=100&limit=50"

DELIVERIES=${DELIVERIES:-20}
echo "==> webhook deliveries: $DELIVERIES loads delivered, one webhook on a loopback receiver"
"$VENV/bin/python" - "$BENCH_PORT" "$key" "$site" "$DELIVERIES" <<'PY'
import http.server, json, sys, threading, time, urllib.request
port, key, site, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
got = []
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        got.append(time.monotonic())
        self.send_response(204)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
def call(method, path, body=None, content_type="application/json"):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data, method=method,
                                     headers={"X-Api-Key": key, "Content-Type": content_type})
    return json.load(urllib.request.urlopen(request))
call("POST", "/api/v1/webhooks", {"event": "surplus.delivered",
     "url": f"http://127.0.0.1:{server.server_address[1]}/hook"})
png = b"\x89PNG\r\n\x1a\n" + bytes(16)
form = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"w.png\"\r\n"
        b"Content-Type: image/png\r\n\r\n" + png + b"\r\n--b--\r\n")
started = time.monotonic()
for _ in range(n):
    load = call("POST", "/api/v1/surpluses", {"site_id": site, "volume_m3": 2})["data"]["id"]
    call("POST", f"/api/v1/surpluses/{load}/waybill", form, "multipart/form-data; boundary=b")
    call("PATCH", f"/api/v1/surpluses/{load}", {"status": "delivered"})
deadline = time.monotonic() + 120
while len(got) < n and time.monotonic() < deadline:
    time.sleep(0.2)
print(json.dumps({"deliveries": n, "received": len(got),
                  "seconds_from_first_patch_to_last_post": round(got[-1] - started, 2) if got else None}))
PY

"$VENV/bin/python" - "$log" <<'PY'
import json, sys
calls = {}
messages = {}
durations = []
items = []
cells = {}
for line in open(sys.argv[1]):
    try:
        row = json.loads(line)
    except ValueError:
        continue
    route = row.get("span", {}).get("route")
    if row.get("message") == "daily figures read":
        items.append(row["items_read"])
    if row.get("message") == "geo cells read":
        key = (row["precision"], row["queries"])
        cells.setdefault(key, set()).add(row["items_read"])
    if route and route.startswith("/api/v1/") and row.get("status") == 200:
        calls.setdefault(route, []).append(row["ddb_calls"])
    if row.get("message") == "queue message handled":
        kind = json.loads(row["body"]).get("kind", "?")
        messages.setdefault(kind, []).append(row["ddb_calls"])
    if row.get("message") == "webhook attempt":
        durations.append(row["duration_ms"])
for route, counts in sorted(calls.items()):
    print(json.dumps({"route": route, "requests_logged": len(counts),
                      "ddb_calls_per_request": round(sum(counts) / len(counts), 2),
                      "ddb_calls_max": max(counts)}))
if items:
    print(json.dumps({"summary_items_read": sorted(set(items))}))
for (precision, queries), read in sorted(cells.items()):
    print(json.dumps({"nearby_search": {"cell_precision": precision, "queries": queries,
                                        "items_read": sorted(read)}}))
for kind, counts in sorted(messages.items()):
    print(json.dumps({"queue_message": kind, "handled": len(counts),
                      "ddb_calls_per_message": round(sum(counts) / len(counts), 2),
                      "ddb_calls_max": max(counts)}))
if durations:
    durations.sort()
    print(json.dumps({"webhook_attempts": len(durations),
                      "attempt_ms_p50": durations[len(durations) // 2], "attempt_ms_max": durations[-1]}))
PY
kill "$server"; wait "$server" 2>/dev/null || true; server=""

echo "==> release orgs binary: size and cold start (process start to first response), $COLD_RUNS runs"
for _ in $(seq 1 "$COLD_RUNS"); do
    RATE_LIMIT_PER_WINDOW=100000000 $bin/bench cold target/release/orgs events/orgs-list.json "$key"
done
