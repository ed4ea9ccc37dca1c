#!/usr/bin/env bash
# `make cpu-pairs A=<commit> B=<commit>`: the server CPU per request of two
# commits, side by side on this machine. Each commit's dev server and admin
# CLI are built (bench-server profile) from `git archive` into
# .local/cpu/<commit>, each in a target directory of its own (one shared by
# two source trees mixes their crates: cargo knows a workspace member by
# name and version, not by path); then
# CPU_PAIRS (5) pairs of `make load`'s traffic (tools/local/scripts/
# load_test.py, this tree's) run against each, interleaved (A B, B A, ...),
# each on emptied engines with CPU_KEYS (20) keys of its own. The rate
# limit is set out of reach (RATE_LIMIT_PER_WINDOW, 10^8) so that both
# serve the same mix of creates, reads and pages, not of 429s. Prints each
# run, then the median of the pairs' ratio B/A of server CPU ms per request
# with its spread; the runs are kept in .local/cpu/pairs.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=${A:?"A=<commit> B=<commit>"} B=${B:?"A=<commit> B=<commit>"}
PAIRS=${CPU_PAIRS:-5}
SECONDS_EACH=${CPU_SECONDS:-15}
CONNECTIONS=${CPU_CONNECTIONS:-50}
KEYS=${CPU_KEYS:-20}
export MOTO_PORT=${CPU_MOTO_PORT:-5107} DYNAMODB_PORT=${CPU_DYNAMODB_PORT:-8107}
export AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$DYNAMODB_PORT
export RATE_LIMIT_PER_WINDOW=100000000
source tools/local/scripts/env.sh
source tools/local/scripts/private_stack.sh
PORT=${CPU_PORT:-3102}
root=.local/cpu
mkdir -p "$root"
py() { "$VENV/bin/python" "$@"; }

# build COMMIT: its dev server and admin CLI in $root/<sha>/bin.
build() {
    local sha dir
    sha=$(git rev-parse --short=12 "$1^{commit}")
    dir=$root/$sha
    if [ ! -x "$dir/bin/local" ]; then
        echo "==> cpu-pairs: building $1 ($sha) in $dir" >&2
        rm -rf "$dir" && mkdir -p "$dir/src" "$dir/bin"
        git archive "$sha" | tar -x -C "$dir/src"
        (cd "$dir/src" && CARGO_TARGET_DIR=$PWD/../target CARGO_INCREMENTAL=0 \
            cargo build -q --profile bench-server -p local -p admin) >&2
        cp "$dir/target/bench-server/local" "$dir/target/bench-server/admin" "$dir/bin/"
        rm -rf "$dir/target" "$dir/src"
    fi
    echo "$dir/bin"
}

a_bin=$(build "$A")
b_bin=$(build "$B")
private_engines

# run LABEL BIN: one load run against BIN's server on emptied engines.
run() {
    curl -sf -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
    py - <<'PY'
import os, boto3
db = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"],
                  region_name=os.environ["AWS_REGION"])
for table in db.list_tables()["TableNames"]:
    db.delete_table(TableName=table)
PY
    "$2/admin" setup-local >/dev/null 2>&1
    local keys=()
    for _ in $(seq 1 "$KEYS"); do
        keys+=("$(py -c "import json,sys; print(json.loads(sys.argv[1])['api_key'])" "$("$2/admin" demo 2>/dev/null)")")
    done
    bin=$2 serve_local "$PORT" "$root/server-$1.log"
    py tools/local/scripts/load_test.py "$PORT" "$SECONDS_EACH" "$CONNECTIONS" \
        "$server" "$(engine_pid dynamodb)" "${keys[@]}" | head -1 |
        py -c "import json,sys; r=json.load(sys.stdin)['load_test']; r['label']='$1'; print(json.dumps(r))" |
        tee -a "$root/pairs.jsonl"
    stop_local
}

: >"$root/pairs.jsonl"
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then run A "$a_bin"; run B "$b_bin"; else run B "$b_bin"; run A "$a_bin"; fi
done
py - "$root/pairs.jsonl" "$A" "$B" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
a = [r for r in runs if r["label"] == "A"]
b = [r for r in runs if r["label"] == "B"]
ratios = sorted(y["server_cpu_ms_per_request"] / x["server_cpu_ms_per_request"] for x, y in zip(a, b))
cpu = lambda rs: statistics.median(r["server_cpu_ms_per_request"] for r in rs)
rps = lambda rs: statistics.median(r["requests_per_s"] for r in rs)
print(json.dumps({"cpu_pairs": {
    "a": sys.argv[2], "b": sys.argv[3], "pairs": len(ratios),
    "a_server_cpu_ms_per_request": cpu(a), "b_server_cpu_ms_per_request": cpu(b),
    "a_requests_per_s": rps(a), "b_requests_per_s": rps(b),
    "b_over_a_median": round(statistics.median(ratios), 3),
    "b_over_a_spread": [round(ratios[0], 3), round(ratios[-1], 3)],
}}))
PY
