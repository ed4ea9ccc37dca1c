#!/usr/bin/env bash
# `make soak` (and, short, `make test`): builds the dev server and the
# operator CLI (SOAK_PROFILE: bench-server, built like the Lambda
# functions, or dev, the tests' build), runs the soak's own unit tests,
# then tools/soak/soak.py with the arguments given (--duration SECONDS of
# traffic, --out DIR, --seed N, --clients N). Its engines, ports and table
# are its own (ports from 5300): it runs beside `make run` or `make test`.
# With BOUNDARY (tools/local/scripts/clock.sh), its clock passes that
# boundary mid-traffic.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/local/scripts/env.sh
profile=${SOAK_PROFILE:-bench-server}
if [ "$profile" = dev ]; then dir=debug; else dir=$profile; fi
echo "==> soak: building the dev server and the admin CLI ($profile profile)"
# The tests' build (dev) is the workspace's, as `make test` builds it: done
# already there.
if [ "$profile" = dev ]; then scope=(--workspace --bins); else scope=(-p local -p admin); fi
cargo build -q --locked --profile "$profile" "${scope[@]}"
echo "==> soak: its own unit tests (fault proxy, report)"
"$VENV/bin/python" -m unittest discover -s tools/soak -p 'test_*.py' 2>&1 | tail -1
# At a boundary (BOUNDARY, tools/local/scripts/clock.sh): the soak's
# processes (its engines are its own) pass it in the middle of its traffic.
if [[ ${BOUNDARY:-off} != off ]]; then
    duration=600
    args=("$@")
    for i in "${!args[@]}"; do [[ ${args[$i]} == --duration ]] && duration=${args[$((i + 1))]%.*}; done
    source tools/local/scripts/clock.sh
    BOUNDARY_LEAD=${BOUNDARY_SOAK_LEAD:-$((30 + duration / 2))} clock_at_boundary
fi
# SOAK_MAIN=fairness: `make fairness` (tools/soak/fairness.py), on the same build.
exec "$VENV/bin/python" "tools/soak/${SOAK_MAIN:-soak}.py" --bin "$TARGET_DIR/$dir" "$@"
