# The steps that `make bench` (bench.sh) and `make load` (load.sh) share
# (sourced after env.sh, from the repository root, with MOTO_PORT and
# DYNAMODB_PORT set to ports of the caller's own): engines of their own,
# emptied, and the dev server of the bench-server profile, all stopped on
# exit.

bin=$TARGET_DIR/bench-server
started=""
server=""

private_cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    server=""
    # shellcheck disable=SC2086 # the names of the engines this run started
    tools/local/scripts/engines.sh stop $started
    started=""
}

# private_engines: the engines at MOTO_PORT and DYNAMODB_PORT, started (or
# reused) and emptied; stopped on exit when this run started them.
private_engines() {
    started=$(tools/local/scripts/engines.sh start)
    trap private_cleanup EXIT
    curl -sf -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
    "$VENV/bin/python" - <<'PY'
import os, boto3
db = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"],
                  region_name=os.environ["AWS_REGION"])
for table in db.list_tables()["TableNames"]:
    db.delete_table(TableName=table)
PY
}

# engine_pid ENGINE: the process id of an engine this project started
# (empty when it was reused).
engine_pid() { cat "$STATE_DIR/$1-$( [ "$1" = moto ] && echo "$MOTO_PORT" || echo "$DYNAMODB_PORT").pid" 2>/dev/null || true; }

# serve_local PORT LOG: the dev server on PORT, logging JSON to LOG (at
# SERVE_LOG's levels, info), with the caller's environment; returns once
# it listens.
serve_local() {
    LOCAL_ADDR=127.0.0.1:$1 RUST_LOG=${SERVE_LOG:-info} LOG_FORMAT=json $bin/local >"$2" 2>&1 &
    server=$!
    for _ in $(seq 1 100); do
        "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.3)" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "the dev server did not listen on $1 (log: $2)" >&2
    return 1
}

# stop_local: stops the dev server.
stop_local() {
    if [ -n "$server" ]; then kill "$server"; wait "$server" 2>/dev/null || true; fi
    server=""
}
