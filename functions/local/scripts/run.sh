#!/usr/bin/env bash
# `make run`: emulator, table/bucket/queues, a demo organization and key,
# then the dev server in the foreground. Ctrl-C stops what this started.
# Several runs may share one emulator: the last one to stop stops it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source functions/local/scripts/env.sh

in_use() { "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.3)" 2>/dev/null; }
if [ -n "${PORT:-}" ]; then
    if in_use "$PORT"; then
        echo "Port $PORT is in use. Choose another one: make run PORT=..." >&2
        exit 1
    fi
else
    # Default 3000; a second `make run` takes the next free port.
    PORT=3000
    while in_use "$PORT"; do PORT=$((PORT + 1)); done
fi
ADDR=127.0.0.1:$PORT

echo "==> building the dev server and the admin CLI"
cargo build -q -p local -p admin

emulator=$(functions/local/scripts/emulator.sh start)
echo "==> emulator ($emulator) at $AWS_ENDPOINT_URL"
runs=$STATE_DIR/runs
mkdir -p "$runs"
touch "$runs/$$"
if [ "$emulator" = started ]; then touch "$STATE_DIR/moto.by-run"; fi
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    rm -f "$runs/$$"
    for other in "$runs"/*; do
        [ -e "$other" ] || continue
        if kill -0 "$(basename "$other")" 2>/dev/null; then return 0; fi
        rm -f "$other"
    done
    # The last run stops an emulator that a run started.
    if [ -f "$STATE_DIR/moto.by-run" ]; then
        rm -f "$STATE_DIR/moto.by-run"
        functions/local/scripts/emulator.sh stop
        echo "==> emulator stopped"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "==> creating the table, bucket and queues (if missing)"
setup=$(target/debug/admin setup-local 2>/dev/null)
# The dev server runs the webhook dispatcher from the local queue, and lets
# webhooks point at a plain-HTTP receiver on loopback (development only).
export WEBHOOK_QUEUE_URL=${WEBHOOK_QUEUE_URL:-$(queue_url "$setup" webhooks)}
export WEBHOOK_DLQ_URL=${WEBHOOK_DLQ_URL:-$(queue_url "$setup" webhooks-dlq)}
export WEBHOOK_ALLOW_LOOPBACK_HTTP=${WEBHOOK_ALLOW_LOOPBACK_HTTP:-true}
demo=$(target/debug/admin demo 2>/dev/null)
field() { "$VENV/bin/python" -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "$demo"; }
key=$(field api_key)

LOCAL_ADDR=$ADDR LOG_FORMAT=${LOG_FORMAT:-text} target/debug/local &
server=$!
for _ in $(seq 1 100); do
    in_use "$PORT" && break
    sleep 0.1
done

cat <<MSG

Dev server: http://$ADDR   (docs: http://$ADDR/docs)
Demo organization: $(field org_name) ($(field org_id))
API key (all scopes, shown once): $key

Try:
  curl -s -H "Authorization: Bearer $key" http://$ADDR/api/v1/orgs

Webhooks are delivered from the local queue; a plain-HTTP receiver on
loopback is allowed here (see docs/webhooks.md, "Trying it locally"):
  curl -s -H "Authorization: Bearer $key" -H 'content-type: application/json' \\
    -d '{"event":"surplus.delivered","url":"http://127.0.0.1:8000/hook"}' http://$ADDR/api/v1/webhooks

The admin CLI reaches this stack with no flags, e.g.:
  cargo run -q -p admin -- list-keys --org $(field org_id)

Ctrl-C stops the server (and the emulator, unless another make run still uses it).
MSG
wait "$server"
