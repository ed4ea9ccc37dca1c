# The steps that `make bench` (bench.sh) and `make load` (load.sh) share
# (sourced after env.sh, from the repository root, with MOTO_PORT set to a
# port of the caller's own): an emulator of their own, emptied, and the
# dev server of the bench-server profile, both stopped on exit.

bin=${CARGO_TARGET_DIR:-target}/bench-server
emulator=""
server=""

private_cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; fi
    server=""
    if [ "$emulator" = started ]; then functions/local/scripts/emulator.sh stop; fi
}

# private_emulator: the emulator at MOTO_PORT, started (or reused) and
# emptied; stopped on exit when this run started it.
private_emulator() {
    emulator=$(functions/local/scripts/emulator.sh start)
    curl -sf -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
    trap private_cleanup EXIT
}

# serve_local PORT LOG: the dev server on PORT, logging JSON to LOG, with
# the caller's environment; returns once it listens.
serve_local() {
    LOCAL_ADDR=127.0.0.1:$1 RUST_LOG=info LOG_FORMAT=json $bin/local >"$2" 2>&1 &
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
