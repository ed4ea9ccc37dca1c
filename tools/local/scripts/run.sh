#!/usr/bin/env bash
# `make run`: the engines (DynamoDB Local, moto), table/bucket/queues, a
# demo organization and key, then the dev server in the foreground. Ctrl-C
# stops what this started. Several runs may share the engines: the last one
# to stop stops them.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tools/local/scripts/env.sh
source tools/local/scripts/stack.sh

# Default 3000; a second `make run` takes the next free port.
pick_port 3000 run
ADDR=127.0.0.1:$PORT

echo "==> building the dev server and the admin CLI"
cargo build -q -p local -p admin

server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    stack_leave
}
trap cleanup EXIT
trap 'exit 130' INT TERM
stack_join

# The dev server runs the webhook dispatcher from the local queue.
stack_prepare
stack_demo
key=$DEMO_KEY

# Its metric lines are kept for `make dashboard` (.local/run-server.log),
# and kept off the terminal.
LOCAL_ADDR=$ADDR LOG_FORMAT=${LOG_FORMAT:-text} $TARGET_DIR/debug/local \
    > >(tee -a "$STATE_DIR/run-server.log" | grep --line-buffered -v '^{"_aws"') 2>&1 &
server=$!
for _ in $(seq 1 100); do
    in_use "$PORT" && break
    sleep 0.1
done

cat <<MSG

Dev server: http://$ADDR   (docs: http://$ADDR/docs)
Demo organization: $DEMO_ORG_NAME ($DEMO_ORG_ID)
API key (all scopes, shown once): $key

Try:
  curl -s -H "Authorization: Bearer $key" http://$ADDR/api/v1/orgs

Webhooks are delivered from the local queue; a plain-HTTP receiver on
loopback is allowed here (see docs/webhooks.md, "Trying it locally"):
  curl -s -H "Authorization: Bearer $key" -H 'content-type: application/json' \\
    -d '{"event":"surplus.delivered","url":"http://127.0.0.1:8000/hook"}' http://$ADDR/api/v1/webhooks

The admin CLI reaches this stack with no flags, e.g.:
  cargo run -q -p admin -- list-keys --org $DEMO_ORG_ID

Ctrl-C stops the server (and the engines, unless another make run or make watch still uses them).
MSG
wait "$server"
