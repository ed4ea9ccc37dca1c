# The steps that `make run` (run.sh) and `make watch` (watch.sh) share
# (sourced after env.sh, from the repository root): the port, the engines
# shared between runs, the table/bucket/queues and a demo organization.

in_use() { "$VENV/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.3)" 2>/dev/null; }

# pick_port DEFAULT TARGET: sets PORT. A PORT given by the caller must be
# free; without one, DEFAULT or the next free port after it (so a second
# `make TARGET` runs beside the first).
pick_port() {
    if [ -n "${PORT:-}" ]; then
        if in_use "$PORT"; then
            echo "Port $PORT is in use. Choose another one: make $2 PORT=..." >&2
            exit 1
        fi
    else
        PORT=$1
        while in_use "$PORT"; do PORT=$((PORT + 1)); done
    fi
}

# stack_join: starts the engines (DynamoDB Local, moto), or reuses those
# that answer, and counts this run ($$) among their users. stack_leave
# (call it on exit): the last run to leave stops the engines that a run
# started. `make run` and `make watch` count together.
stack_join() {
    local started engine
    started=$(tools/local/scripts/engines.sh start)
    echo "==> engines (started: ${started:-none, reused}): DynamoDB Local at $AWS_ENDPOINT_URL_DYNAMODB, moto at $AWS_ENDPOINT_URL"
    mkdir -p "$STATE_DIR/runs"
    touch "$STATE_DIR/runs/$$"
    for engine in $started; do touch "$STATE_DIR/$engine.by-run"; done
}

stack_leave() {
    local other engine
    rm -f "$STATE_DIR/runs/$$"
    for other in "$STATE_DIR/runs"/*; do
        [ -e "$other" ] || continue
        if kill -0 "$(basename "$other")" 2>/dev/null; then return 0; fi
        rm -f "$other"
    done
    for engine in moto dynamodb; do
        if [ -f "$STATE_DIR/$engine.by-run" ]; then
            rm -f "$STATE_DIR/$engine.by-run"
            tools/local/scripts/engines.sh stop "$engine"
            echo "==> $engine stopped"
        fi
    done
}

# stack_prepare: the table, bucket and queues of TABLE_NAME (if missing),
# by the admin CLI ($TARGET_DIR/debug/admin). Exports the queue URLs the
# functions use (unless set), and lets webhooks point at a plain-HTTP
# receiver on loopback (development only; docs/webhooks.md).
stack_prepare() {
    local setup
    echo "==> creating the table, bucket and queues (if missing)"
    setup=$($TARGET_DIR/debug/admin setup-local 2>/dev/null)
    export WEBHOOK_QUEUE_URL=${WEBHOOK_QUEUE_URL:-$(queue_url "$setup" webhooks)}
    export WEBHOOK_DLQ_URL=${WEBHOOK_DLQ_URL:-$(queue_url "$setup" webhooks-dlq)}
    export WEBHOOK_ALLOW_LOOPBACK_HTTP=${WEBHOOK_ALLOW_LOOPBACK_HTTP:-true}
}

# stack_demo: a new demo organization with an all-scopes key. Sets
# DEMO_ORG_ID, DEMO_ORG_NAME and DEMO_KEY.
stack_demo() {
    local demo
    demo=$($TARGET_DIR/debug/admin demo 2>/dev/null)
    DEMO_ORG_ID=$(demo_field "$demo" org_id)
    DEMO_ORG_NAME=$(demo_field "$demo" org_name)
    DEMO_KEY=$(demo_field "$demo" api_key)
}

demo_field() { "$VENV/bin/python" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# stop_tree PID: stops a process and everything it started. cargo lambda
# watch runs each function through `cargo run` in a session of its own,
# so neither its process group nor its session holds them: the tree of
# parent and child processes does. SIGTERM to PID first (cargo lambda
# watch then stops its functions), SIGKILL to whatever of the tree is
# left after 10 s.
stop_tree() {
    local tree
    tree="$1 $(descendants "$1")"
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        any_alive $tree || break
        sleep 0.2
    done
    kill -KILL $tree 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# descendants PID: the live processes PID started, theirs, and so on (/proc).
descendants() {
    local stat fields state parent pid next
    local -A children=()
    for stat in /proc/[0-9]*/stat; do
        read -r fields 2>/dev/null <"$stat" || continue
        # After "pid (command) ": state, parent, ...
        read -r state parent _ <<<"${fields##*) }"
        [ "$state" = Z ] && continue
        pid=${stat#/proc/}
        children[$parent]+=" ${pid%/stat}"
    done
    local queue=("$1")
    while [ "${#queue[@]}" -gt 0 ]; do
        next=${queue[0]}
        queue=("${queue[@]:1}")
        for pid in ${children[$next]:-}; do
            echo "$pid"
            queue+=("$pid")
        done
    done
}

# any_alive PID...: whether one of them still runs (a zombie does not).
any_alive() {
    local pid fields state
    for pid in "$@"; do
        read -r fields 2>/dev/null <"/proc/$pid/stat" || continue
        read -r state _ <<<"${fields##*) }"
        [ "$state" != Z ] && return 0
    done
    return 1
}
