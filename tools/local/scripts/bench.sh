#!/usr/bin/env bash
# `make bench`: what a request costs, route by route, through the dev server
# against engines of the bench's own (DynamoDB Local, moto).
#   1. DynamoDB Local's GetItem round trip: the yardstick of every wait
#      (each route's p50 is also given as a ratio to it, x_getitem), and
#      the engine's own floor for the shapes a request's calls take
#      (`bench engine`: an UpdateItem, two or three calls at once, a
#      write's admission before or inside its transaction).
#   2. Per route, on one connection (REQUESTS each): a single read, a list
#      page, a create, a PATCH, surplus list pages (50 and 100 rows over
#      LOADS, 100,000, loads of one organization), and DATA_REQUESTS (50)
#      each of the report summary and nearby search over the data sets of
#      3.: DynamoDB calls and sequential round trips per request,
#      p50/p99 latency as the client sees it, and from the server's log the
#      p50 of latency minus the time spent waiting on DynamoDB (`ddb_ms`):
#      the code's own share, and the read and write units DynamoDB
#      reported. The single reads, the 100-row page and the PATCH then
#      run against a second server with WARM_REQUESTS=false (the before)
#      beside the first, in interleaved pairs (PAIRS of PAIR_REQUESTS:
#      A B, B A, ...), each route's before/after ratio of p50s given with
#      its spread over the pairs.
#   3. Costs that must not grow with the data: the summary over a year of
#      10,000 vs 100 loads (rollup items read), nearby search over 10,000
#      places of 100 organizations (index items read), webhook deliveries.
#   4. Every function's release artifact, built by `make build` (cargo
#      lambda, LTO): zip and binary size, and through a minimal Lambda
#      Runtime API the init time (process start to its first request for
#      an invocation) and the start to first response; budgets 5 MB zipped,
#      30 ms init (BINARIES=0 skips the release build, which takes a while).
#   5. The load test of `make load` (tools/local/scripts/load.sh).
#   Beside 2., what a request's metric line costs (`bench metrics`:
#   built, serialised, written), as a share of each read's own time.
set -euo pipefail
cd "$(dirname "$0")/../../.."
# Engines of the bench's own, emptied first, so that what tests and other
# runs left does not count.
export MOTO_PORT=${BENCH_MOTO_PORT:-5105} DYNAMODB_PORT=${BENCH_DYNAMODB_PORT:-8105}
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DYNAMODB_PORT
source tools/local/scripts/env.sh
REQUESTS=${REQUESTS:-500}
DATA_REQUESTS=${DATA_REQUESTS:-50}
BENCH_PORT=${BENCH_PORT:-3100}
BINARIES=${BINARIES:-1}
# The Lambda functions: every directory under functions/.
mapfile -t FUNCTIONS < <(find functions -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)

echo "==> building (dev server and driver: bench-server profile, LTO like the Lambda functions)"
cargo build -q --profile bench-server -p local -p admin
if [ "$BINARIES" != 0 ]; then
    echo "==> the release artifacts of ${#FUNCTIONS[@]} functions (make build)"
    tools/local/scripts/build.sh "${FUNCTIONS[@]}"
fi

source tools/local/scripts/private_stack.sh
private_engines

py() { "$VENV/bin/python" "$@"; }
field() { py -c "import json,sys; print(json.loads(sys.argv[1])$2)" "$1"; }
setup=$($bin/admin setup-local 2>/dev/null)
# The dev server's dispatcher delivers webhooks from the local queue to a
# receiver on loopback (development setting).
export WEBHOOK_QUEUE_URL=$(queue_url "$setup" webhooks)
export WEBHOOK_DLQ_URL=$(queue_url "$setup" webhooks-dlq)
export WEBHOOK_ALLOW_LOOPBACK_HTTP=true

# DynamoDB Local is a JVM: its first thousands of calls run before the JIT
# has compiled their paths. Warmed first, so the waits measured are the
# engine's, not its start's.
$bin/bench getitem "${WARMUP:-3000}" >/dev/null
echo "==> DynamoDB Local's GetItem round trip"
getitem=$($bin/bench getitem "$REQUESTS")
echo "$getitem"
export GETITEM_P50_MS=$(field "$getitem" "['dynamodb_getitem']['p50_ms']")
echo "==> the engine's floor for a request's shapes of calls, $REQUESTS each (bench engine)"
$bin/bench engine "$REQUESTS"

log=$STATE_DIR/bench-server.log
# The limit stays on (its write is part of every request) but high.
RATE_LIMIT_PER_WINDOW=100000000 serve_local "$BENCH_PORT" "$log"

# Organizations of their own for each data set, so that the report tells
# the data sets apart (bench_log.py: by organization, or by the mark of the
# log line from which on a data set is measured).
labels="{}"
marks=$STATE_DIR/bench-marks.jsonl
: >"$marks"
demo() { # LABEL -> sets key, org_id
    local made
    made=$($bin/admin demo 2>/dev/null)
    key=$(field "$made" "['api_key']")
    org_id=$(field "$made" "['org_id']")
    labels=$(py -c "import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]=sys.argv[3]; print(json.dumps(d))" "$labels" "$org_id" "$1")
}
call() { # METHOD PATH [BODY] -> the response's data.id
    py - "$BENCH_PORT" "$key" "$@" <<'PY'
import json, sys, urllib.request
port, key, method, path = sys.argv[1:5]
body = sys.argv[5].encode() if len(sys.argv) > 5 else None
request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", body, method=method,
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request))["data"].get("id", ""))
PY
}
bench() { # METHOD PATH [BODY]: REQUESTS requests on one connection (to PORT, else BENCH_PORT)
    $bin/bench load "127.0.0.1:${PORT:-$BENCH_PORT}" "$1" "$2" "$key" "$REQUESTS" 1 "${3:-}"
}
mark() { # LABEL: the server's log lines from here on are LABEL's ("" ends it)
    py -c "import json,sys; print(json.dumps({'line': sum(1 for _ in open(sys.argv[1])), 'label': sys.argv[2]}))" \
        "$log" "$1" >>"$marks"
}
bench_data() { # PATH: DATA_REQUESTS requests on one connection
    $bin/bench load "127.0.0.1:$BENCH_PORT" GET "$1" "$key" "$DATA_REQUESTS" 1
}

demo routes
routes_key=$key
site=$(call POST /api/v1/sites '{"name": "Bench site", "street_address": "Bench street 1", "lat": 60.17, "lng": 24.94}')
echo "==> per route, one connection, $REQUESTS requests each"
bench GET /api/health
bench GET /api/v1/orgs
bench GET "/api/v1/sites/$site"
bench GET /api/v1/sites
bench POST /api/v1/sites '{"name": "Bench create", "city": "Espoo"}'
bench PATCH "/api/v1/sites/$site" '{"city": "Helsinki"}'

# Surplus pages of the default 50 rows (the organization's partition) and
# of 100 (one site's open loads), over LOADS loads of one organization.
LOADS=${LOADS:-100000}
demo surplus-pages
pages_site=$(call POST /api/v1/sites '{"name": "Loads site"}')
echo "==> seeding $LOADS surplus loads"
$bin/admin seed-loads --org "$org_id" --site "$pages_site" --count "$LOADS" >/dev/null 2>&1
mark "surplus-page-50 of $LOADS"
bench GET /api/v1/surpluses
mark "surplus-page-100 of $LOADS"
bench GET "/api/v1/surpluses?status=open&site_id=$pages_site&limit=100"
mark ""

# Before and after: the same requests on a server whose requests all wait
# for their admission (WARM_REQUESTS=false) beside the warm one, both up at
# once on the same engine and data, measured in interleaved pairs (A B, B A,
# ...: bench_pairs.py), each pair's ratio of p50s, reported with its spread.
# Measured one after the other, the engine's JVM warming over the run once
# outweighed the difference being measured.
PAIRS=${PAIRS:-10}
PAIR_REQUESTS=${PAIR_REQUESTS:-100}
echo "==> before (WARM_REQUESTS=false) and after, $PAIRS interleaved pairs of $PAIR_REQUESTS requests each"
pages_key=$key
cold_log=$STATE_DIR/bench-server-cold.log
cold_port=$((BENCH_PORT + 1))
warm_server=$server
WARM_REQUESTS=false RATE_LIMIT_PER_WINDOW=100000000 serve_local "$cold_port" "$cold_log"
cold_server=$server
server=$warm_server
pairs=$(py - "$routes_key" "$pages_key" "$site" "$pages_site" <<'PY'
import json, sys
routes, pages, site, pages_site = sys.argv[1:5]
print(json.dumps([
    {"label": "GET /api/v1/orgs", "method": "GET", "path": "/api/v1/orgs", "key": routes},
    {"label": "GET /api/v1/sites/{id}", "method": "GET", "path": f"/api/v1/sites/{site}", "key": routes},
    {"label": "PATCH /api/v1/sites/{id}", "method": "PATCH", "path": f"/api/v1/sites/{site}",
     "key": routes, "body": json.dumps({"city": "Helsinki"})},
    {"label": "GET /api/v1/surpluses (100 rows)", "method": "GET",
     "path": f"/api/v1/surpluses?status=open&site_id={pages_site}&limit=100", "key": pages},
]))
PY
)
py tools/local/scripts/bench_pairs.py "$bin/bench" "127.0.0.1:$BENCH_PORT" "127.0.0.1:$cold_port" "$PAIRS" "$PAIR_REQUESTS" "$pairs"
kill "$cold_server"; wait "$cold_server" 2>/dev/null || true

# The summary's cost must not grow with the loads: 10,000 and 100
# delivered loads over a year, the same year-long window.
year="from=$(date -u -d '365 days ago' +%F)&to=$(date -u +%F)"
for n in ${BIG:-10000} ${SMALL:-100}; do
    demo "summary-$n"
    summary_site=$(call POST /api/v1/sites '{"name": "Summary site"}')
    echo "==> seeding $n delivered loads over 365 days"
    $bin/admin seed-loads --org "$org_id" --site "$summary_site" --count "$n" --days 365 --delivered >/dev/null 2>&1
    bench_data "/api/v1/reports/summary?$year"
done

# Nearby search over PLACES places of 100 organizations within 150 km of
# Helsinki: the items read follow the cells the circle covers.
PLACES=${PLACES:-10000}
demo nearby
echo "==> seeding $PLACES places (receiving points, half public; sites; factories) of 100 organizations within 150 km"
$bin/admin seed-places --org "$org_id" --orgs 100 --count "$PLACES" --lat 60.17 --lng 24.94 --spread-km 150 >/dev/null 2>&1
bench_data "/api/v1/places/nearby?lat=60.17&lng=24.94"
bench_data "/api/v1/places/nearby?lat=60.17&lng=24.94&types=receiving_point,site,factory&radius_km=100&limit=50"

DELIVERIES=${DELIVERIES:-20}
demo webhooks
echo "==> webhook deliveries: $DELIVERIES loads delivered, one webhook on a loopback receiver"
py - "$BENCH_PORT" "$key" "$DELIVERIES" <<'PY'
import http.server, json, sys, threading, time, urllib.request
port, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
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
site = call("POST", "/api/v1/sites", {"name": "Delivery site"})["data"]["id"]
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

echo "==> from the server's log: per route, successful requests only"
py tools/local/scripts/bench_log.py "$log" "$labels" "$marks" | tee "$STATE_DIR/bench-routes.jsonl"
echo "==> a request's metric line (bench metrics): its CPU time, and as a share of each read's own time"
metrics=$($bin/bench metrics 20000)
echo "$metrics"
py - "$metrics" "$STATE_DIR/bench-routes.jsonl" <<'PY'
import json, sys
line = json.loads(sys.argv[1])["us_per_line_p50"]
for row in map(json.loads, open(sys.argv[2])):
    if row.get("route", "").startswith("GET ") and row.get("own_p50_ms"):
        print(json.dumps({"route": row["route"], "data": row["data"], "own_p50_us": round(row["own_p50_ms"] * 1000, 1),
                          "metric_line_us": line, "metric_line_share_of_own": round(line / (row["own_p50_ms"] * 1000), 3)}))
PY
echo "==> before (WARM_REQUESTS=false), from its server's log"
py tools/local/scripts/bench_log.py "$cold_log" "$labels"
stop_local

if [ "$BINARIES" != 0 ]; then
    echo "==> release binaries: size and process start to first response"
    first_request() { # FUNCTION -> METHOD PATH of a request it serves
        case "$1" in
        docs) echo "GET /api/health" ;;
        orgs) echo "GET /api/v1/orgs" ;;
        grants) echo "GET /api/v1/org-access-grants" ;;
        reports) echo "GET /api/v1/reports/summary" ;;
        places) echo "GET /api/v1/places/nearby?lat=60.17&lng=24.94" ;;
        geocode | support) echo "GET /api/v1/$1" ;; # 405: POST only
        *) echo "GET /api/v1/$1" ;;
        esac
    }
    demo binaries
    artifacts=${CARGO_TARGET_DIR:-target}/lambda
    starts=$STATE_DIR/bench-starts.jsonl
    : >"$starts"
    for f in "${FUNCTIONS[@]}"; do
        # The binary as Lambda runs it: the zip's bootstrap.
        rm -rf "$STATE_DIR/lambda/$f" && mkdir -p "$STATE_DIR/lambda/$f"
        py -m zipfile -e "$artifacts/$f/bootstrap.zip" "$STATE_DIR/lambda/$f"
        chmod +x "$STATE_DIR/lambda/$f/bootstrap"
        # Three starts each: one start on this machine ranges from 12 to
        # 60 ms of init (bench_starts.py holds the least to the budget).
        for _ in 1 2 3; do
            if [ "$f" = webhook-dispatcher ]; then
                # The schedule's event: one sweep of the outbox.
                RATE_LIMIT_PER_WINDOW=100000000 $bin/bench cold "$STATE_DIR/lambda/$f/bootstrap" events/sweep.json "$key"
            else
                # shellcheck disable=SC2046
                RATE_LIMIT_PER_WINDOW=100000000 $bin/bench cold "$STATE_DIR/lambda/$f/bootstrap" events/orgs-list.json "$key" $(first_request "$f")
            fi | grep '"binary"' | tee -a "$starts"
        done
    done
    py tools/local/scripts/bench_starts.py "$artifacts" "$starts" "${FUNCTIONS[@]}"
fi

# The load test, with engines and a server of its own (make load).
private_cleanup
trap - EXIT
tools/local/scripts/load.sh
