#!/usr/bin/env bash
# `make watch`: the engines, the table/bucket/queues and a demo
# organization and key (as `make run`), then `cargo lambda watch` in the
# foreground: every function on one port through the workspace router
# ([workspace.metadata.lambda.watch.router] in Cargo.toml), each built
# (debug) on its first request and rebuilt when its code changes. Ctrl-C
# stops what this started. Runs beside `make run` on the same engines.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tools/local/scripts/env.sh
source tools/local/scripts/stack.sh
export PATH="$PWD/$VENV/bin:$PATH" # cargo-lambda

# Default 9000 (cargo-lambda's); a second `make watch` takes the next free port.
pick_port 9000 watch
ADDR=127.0.0.1:$PORT

echo "==> building the admin CLI"
cargo build -q -p admin

watch=""
cleanup() {
    trap '' INT TERM
    if [ -n "$watch" ]; then stop_tree "$watch"; fi
    stack_leave
}
trap cleanup EXIT
trap 'exit 130' INT TERM
stack_join
stack_prepare
stack_demo

# The functions read the environment of cargo lambda watch (env.sh, the
# queue URLs above). In a session of its own, so that Ctrl-C reaches only
# this script, whose cleanup stops it and every function it started (on
# Ctrl-C or any exit), in one order.
LOG_FORMAT=${LOG_FORMAT:-text} setsid cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "$PORT" &
watch=$!
for _ in $(seq 1 300); do
    in_use "$PORT" && break
    if ! kill -0 "$watch" 2>/dev/null; then
        echo "cargo lambda watch stopped before it listened on $ADDR (its output is above)" >&2
        exit 1
    fi
    sleep 0.1
done

cat <<MSG

cargo lambda watch: http://$ADDR   (docs: http://$ADDR/docs)
Every path of the router table in Cargo.toml, as in production (no
prefix); a function is built on its first request (tens of seconds the
first time), later requests are fast, and a change to its code rebuilds it.
Demo organization: $DEMO_ORG_NAME ($DEMO_ORG_ID)
API key (all scopes, shown once): $DEMO_KEY

Try:
  curl -s http://$ADDR/api/health
  curl -s -H "Authorization: Bearer $DEMO_KEY" http://$ADDR/api/v1/orgs
  curl -s -H "Authorization: Bearer $DEMO_KEY" -d '{"name": "Harbour"}' http://$ADDR/api/v1/sites

The webhook dispatcher has no route; invoke it with an event (here the
5-minute outbox sweep; make run's dev server also feeds it the queue):
  PATH=$VENV/bin:\$PATH cargo lambda invoke webhook-dispatcher --invoke-address 127.0.0.1 --invoke-port $PORT --data-file events/sweep.json

Ctrl-C stops cargo lambda watch and its functions (and the engines,
unless a make run or make watch still uses them).
MSG
wait "$watch"
