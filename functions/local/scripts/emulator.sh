#!/usr/bin/env bash
# Starts moto's server on loopback unless one already answers (then reuses
# it), or stops the one this project started.
#   emulator.sh start   prints "started" or "reused"
#   emulator.sh stop    stops the emulator started by `start`, if any
set -euo pipefail
cd "$(dirname "$0")/../../.."
source functions/local/scripts/env.sh
mkdir -p "$STATE_DIR"
pidfile="$STATE_DIR/moto-$MOTO_PORT.pid"
logfile="$STATE_DIR/moto-$MOTO_PORT.log"

answers() {
    "$VENV/bin/python" -c "import socket,sys; socket.create_connection(('$MOTO_HOST', $MOTO_PORT), 0.3)" 2>/dev/null
}

case "${1:-}" in
start)
    if answers; then echo reused; exit 0; fi
    "$VENV/bin/python" functions/local/scripts/moto_server.py "$MOTO_HOST" "$MOTO_PORT" >"$logfile" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 150); do
        if answers; then echo started; exit 0; fi
        sleep 0.2
    done
    echo "moto_server did not start on $MOTO_HOST:$MOTO_PORT; see $logfile" >&2
    exit 1
    ;;
stop)
    if [ -f "$pidfile" ]; then
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        # It finishes the request in hand first; give it 10 s, then insist.
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$pidfile"
    fi
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
