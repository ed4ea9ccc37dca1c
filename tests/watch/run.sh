#!/usr/bin/env bash
# The `cargo lambda watch` smoke (part of `make test`): the way the design
# names for local testing keeps working. Starts (or reuses) the engines,
# prepares a table of this run's own with its bucket and queues and a demo
# organization with an all-scopes key, starts `cargo lambda watch` on a free
# port, and runs tests/watch/smoke.py against it: the router table against
# the description, one route of every function (the first request of each
# builds it, debug), the webhook dispatcher through `cargo lambda invoke`,
# every path of the router table. Stops everything it started, on success,
# failure or interruption. Writes .local/watch/summary.json; exits non-zero
# on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/local/scripts/env.sh
source tools/local/scripts/stack.sh
export PATH="$PWD/$VENV/bin:$PATH" # cargo-lambda
out=$STATE_DIR/watch
rm -rf "$out"
mkdir -p "$out"
began=$(date +%s)

port=${WATCH_SMOKE_PORT:-9100}
while in_use "$port"; do port=$((port + 1)); done

echo "==> building the admin CLI"
# The workspace's binaries, built as `make test` builds them (its features:
# done already there, and `cargo lambda watch` runs the functions' own).
cargo build -q --locked --workspace --bins

started=$(tools/local/scripts/engines.sh start)
# A table, bucket and queues of this run's own; the providers of geocode
# and support are left unset, so that both answer 503 *_not_configured.
export TABLE_NAME=watch-$(date +%s)-$$
unset WEBHOOK_QUEUE_URL WEBHOOK_DLQ_URL GEOCODE_API_KEY GEOCODE_API_KEY_SECRET_ARN \
    SUPPORT_GITHUB_REPOSITORY SUPPORT_GITHUB_TOKEN SUPPORT_GITHUB_TOKEN_SECRET_ARN PUBLIC_API_ENABLED
watch=""
cleanup() {
    trap '' INT TERM
    if [ -n "$watch" ]; then stop_tree "$watch"; fi
    # boto3 reads AWS_DEFAULT_REGION, not AWS_REGION: name the region.
    "$VENV/bin/python" - "$TABLE_NAME" "${WEBHOOK_QUEUE_URL:-}" "${WEBHOOK_DLQ_URL:-}" <<'PY' || true
import contextlib, os, sys, boto3
table, queues = sys.argv[1], [q for q in sys.argv[2:] if q]
region = os.environ["AWS_REGION"]
with contextlib.suppress(Exception):  # not created: nothing to delete
    boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"],
                 region_name=region).delete_table(TableName=table)
for queue in queues:
    with contextlib.suppress(Exception):
        boto3.client("sqs", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                     region_name=region).delete_queue(QueueUrl=queue)
PY
    # shellcheck disable=SC2086 # the names of the engines this run started
    tools/local/scripts/engines.sh stop $started
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo "==> engines (started: ${started:-none, reused}); table $TABLE_NAME"
stack_prepare
stack_demo

# In a session of its own, so that an interrupt reaches only this script;
# on any exit, cleanup stops it and every function it started (each
# through `cargo run`). --ignore-changes: no reloads while the test runs.
echo "==> cargo lambda watch on 127.0.0.1:$port (log: $out/watch.log)"
RUST_LOG=warn LOG_FORMAT=json setsid cargo lambda watch --locked --ignore-changes \
    --invoke-address 127.0.0.1 --invoke-port "$port" >"$out/watch.log" 2>&1 &
watch=$!
for _ in $(seq 1 600); do
    in_use "$port" && break
    if ! kill -0 "$watch" 2>/dev/null; then
        echo "cargo lambda watch stopped; see $out/watch.log:" >&2
        tail -20 "$out/watch.log" >&2
        exit 1
    fi
    sleep 0.1
done

status=0
"$VENV/bin/python" -u tests/watch/smoke.py "http://127.0.0.1:$port" "$DEMO_KEY" "$out" || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- the end of $out/watch.log:"
    tail -40 "$out/watch.log"
fi
echo "==> watch smoke took $(($(date +%s) - began)) s in all (builds included)"
exit "$status"
